//go:build cgo && ttnn

package whisperrunner

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/childtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

// TestMetalWhisper runs TestChildMetalWhisper in a child process: the metal backend must be
// the first and only backend its process selects (this package's TestMain selects the
// simulator otherwise).
func TestMetalWhisper(t *testing.T) {
	if _, ok := ttnn.FakeRuntime(); !ok {
		t.Skip("metal is linked against a real tt::runtime: this test runs over the fake (scripts/check-metal.sh)")
	}
	whisperDir(t) // skips, before the child runs, without the vocabulary
	childtest.Run(t, "TestChildMetalWhisper")
}

// writeWhisperPrograms writes MODEL_WEIGHTS_PATH for the metal runner: the vocabulary (a link
// to the shared test data) and <name>.ttnn of each named program from its declaration, changed
// by mod when mod names it. Every program is traced as tt-mlir's trace pass makes it (capture
// on the first run, replay after).
func writeWhisperPrograms(t *testing.T, names []string, mod map[string]func(*ttnn.ProgramSpec)) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(whisperDir(t), "multilingual.tiktoken"), filepath.Join(dir, "multilingual.tiktoken")))
	for _, name := range names {
		spec, ok := programs.Lookup(name) // a copy: mod may change it
		require.True(t, ok, name)
		if f := mod[name]; f != nil {
			f(&spec)
		}
		progs := ttnnfile.FromSpec(spec)
		for i := range progs {
			progs[i].Traced, progs[i].Ops = true, 8
		}
		require.NoError(t, ttnnfile.Write(context.Background(), ttnnfile.SDKDir(), programs.MetalPath(dir, name), progs))
	}
	return dir
}

func TestChildMetalWhisper(t *testing.T) {
	if os.Getenv(childtest.Env) != t.Name() {
		t.Skip("runs only as a child process (of TestMetalWhisper)")
	}
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		t.Fatalf("the .ttnn fixtures need flatc and the SDK: %v", err)
	}
	ctx := context.Background()
	reg := runners.NewRegistry()
	Register(reg)
	spec := func(weights string, maxBatch int) runners.WorkerSpec {
		return runners.WorkerSpec{WorkerID: "0", Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: &config.Settings{
			DeviceBackend: config.BackendMetal, ModelWeightsPath: weights, WorkerIsolation: config.IsolationProcess,
			TraceRegionSize: config.DefaultTraceRegionSize, MaxBatchSize: maxBatch}}
	}
	worker := func(weights string, maxBatch int) *Runner {
		r, err := reg.New(catalogue.RunnerWhisper, spec(weights, maxBatch))
		require.NoError(t, err)
		wr, ok := r.(*Runner)
		require.True(t, ok, "DEVICE_BACKEND=metal: the real pipeline, not the simulated runner (%T)", r)
		return wr
	}
	both := []string{EncoderProgram, DecoderProgram}

	t.Run("missing programs are a start-up error naming the file, not the simulated runner", func(t *testing.T) {
		for _, tc := range []struct {
			names    []string
			maxBatch int
			missing  string
		}{
			{nil, 1, EncoderProgram},
			{[]string{EncoderProgram}, 1, DecoderProgram},
			{[]string{EncoderProgram}, 2, DecoderProgram}, // no -b2: MAX_BATCH_SIZE 2 runs the batch-1 step
			{[]string{EncoderProgram, BatchProgram(4)}, 3, ""},
		} {
			_, err := reg.New(catalogue.RunnerWhisper, spec(writeWhisperPrograms(t, tc.names, nil), tc.maxBatch))
			if tc.missing == "" {
				require.NoError(t, err, "MAX_BATCH_SIZE %d with %v", tc.maxBatch, tc.names)
				continue
			}
			require.ErrorContains(t, err, "MODEL_WEIGHTS_PATH has no "+tc.missing+".ttnn", "MAX_BATCH_SIZE %d with %v", tc.maxBatch, tc.names)
		}
		_, err := reg.New(catalogue.RunnerWhisper, spec("", 1))
		require.ErrorContains(t, err, "MODEL_WEIGHTS_PATH is not set")
	})

	t.Run("a program that differs from its declaration stops start-up with one line", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			maxBatch int
			mod      map[string]func(*ttnn.ProgramSpec)
			want     string
		}{
			{"decoder step of another vocabulary", 1, map[string]func(*ttnn.ProgramSpec){DecoderProgram: func(s *ttnn.ProgramSpec) {
				s.Functions[0].Outputs[0].Shape[2] = 51865
			}}, "program whisper-decoder-step ("},
			{"encoder of 80 mel bins", 1, map[string]func(*ttnn.ProgramSpec){EncoderProgram: func(s *ttnn.ProgramSpec) {
				s.Functions[0].Inputs[0].Shape[1] = 80
			}}, "program whisper-encoder ("},
			{"batched step without its position input", 2, map[string]func(*ttnn.ProgramSpec){BatchProgram(2): func(s *ttnn.ProgramSpec) {
				f := &s.Functions[0]
				f.Inputs = append(f.Inputs[:1], f.Inputs[2:]...)
			}}, "program whisper-decoder-step-b2 ("},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := worker(writeWhisperPrograms(t, []string{EncoderProgram, DecoderProgram, BatchProgram(2)}, tc.mod), tc.maxBatch)
				err := r.Warmup(ctx)
				require.ErrorIs(t, err, ttnn.ErrContract)
				require.ErrorIs(t, err, runners.ErrConfig, "the worker fails at once instead of retrying")
				require.NotContains(t, err.Error(), "\n")
				require.Contains(t, err.Error(), tc.want)
				t.Logf("%s: %v", tc.name, err)
				require.NoError(t, r.Close())
			})
		}
	})

	t.Run("the declared programs warm up and transcribe on metal", func(t *testing.T) {
		for _, tc := range []struct {
			maxBatch, tasks int
			names           []string
		}{
			{1, 2, both},
			{2, 2, []string{EncoderProgram, BatchProgram(2)}},
		} {
			before, _ := ttnn.FakeRuntime()
			r := worker(writeWhisperPrograms(t, tc.names, nil), tc.maxBatch)
			start := time.Now()
			require.NoError(t, r.Warmup(ctx))
			warm, _ := ttnn.FakeRuntime()
			t.Logf("warm-up: %d program runs in %v", warm.Submits-before.Submits, time.Since(start).Round(time.Millisecond))
			info, ok := r.DeviceInfo()
			require.True(t, ok)
			require.Equal(t, "metal", info.Backend)
			// Two seconds of a tone: the fake's logits decode to whatever they decode to, but the
			// long-form loop ends (sample_len, the temperature schedule) with a well-formed result.
			samples := make([]float32, 32000)
			for i := range samples {
				samples[i] = 0.1 * float32((i/40)%2*2-1)
			}
			var tasks []runners.Task
			for range tc.tasks {
				// Greedy only: the fake's flat logits fail every fallback threshold, and each of the
				// six default temperatures would decode the window again (the warm-up does).
				tasks = append(tasks, runners.Task{Ctx: ctx, Request: &runners.AudioRequest{Samples: samples, SampleRate: 16000, Duration: 2,
					Decode: runners.DecodeOptions{Temperatures: []float64{0}}}})
			}
			start = time.Now()
			var texts []string
			var mu sync.Mutex
			for _, o := range r.Run(ctx, tasks) {
				require.NoError(t, o.Err)
				res, ok := o.Value.(*runners.TranscriptionResult)
				require.True(t, ok, "%T", o.Value)
				require.Equal(t, "transcribe", res.Task)
				require.InDelta(t, 2.0, res.Duration, 1e-9)
				require.NotEmpty(t, res.Language, "a language was detected from the fake's logits")
				for _, s := range res.Segments {
					require.GreaterOrEqual(t, s.EndTime, s.StartTime)
					require.LessOrEqual(t, len(s.Tokens), 224, "sample_len bounds a window's tokens")
				}
				mu.Lock()
				texts = append(texts, res.Text)
				mu.Unlock()
			}
			if tc.maxBatch == 1 {
				// The fake's outputs are a hash of the program and its inputs: the same audio, the
				// same text (batched rows differ: each row reads its own part of the fake's logits).
				require.Equal(t, texts[0], texts[1])
			}
			t.Logf("MAX_BATCH_SIZE %d on metal over the fake runtime (the fake's logits, not a model's): language and text %q", tc.maxBatch, texts[0])
			mid, _ := ttnn.FakeRuntime()
			t.Logf("%d tasks: %d program runs in %v", tc.tasks, mid.Submits-warm.Submits, time.Since(start).Round(time.Millisecond))
			require.Equal(t, before.TracesCaptured+2, mid.TracesCaptured, "the encoder's and the decoder step's compiled-in traces were captured")
			require.Greater(t, mid.TracesReplayed, before.TracesReplayed+100, "decoding replays the step's trace, one per token")
			require.NoError(t, r.Close())
			after, _ := ttnn.FakeRuntime()
			require.Zero(t, after.DeviceBuffers, "no device buffer left")
			require.Zero(t, after.Traces, "the traces were released")
			require.Zero(t, after.MeshesOpen)
			require.Equal(t, before.BuffersLeakedAtClose, after.BuffersLeakedAtClose)
		}
	})
}
