//go:build cgo

package whisperrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/decoding"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// warmupDecode is what the warm-up (one second of silence in English) consumes of a script:
// one decode, skipped as silence.
var warmupDecode = dec{nospeech: 0.9}

// newRunner builds and warms up a runner with the test vocabulary (TTB_SIM_SCRIPT as set).
func newRunner(t *testing.T, edit func(*Config)) *Runner {
	t.Helper()
	cfg := Config{Tokenizer: largeV3(t), Device: DeviceOptions(ttnn.MeshShape{Rows: 1, Cols: 1}, 0)}
	if edit != nil {
		edit(&cfg)
	}
	r, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.NoError(t, r.Warmup(context.Background()))
	return r
}

// recorder collects what a task streams and reports.
type recorder struct {
	mu       sync.Mutex
	chunks   []runners.TranscriptChunk
	progress [][2]int
	emitErr  error
}

func (rec *recorder) task(ctx context.Context, req *runners.AudioRequest) runners.Task {
	return runners.Task{
		Ctx: ctx, Request: req,
		Emit: func(c runners.Chunk) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.chunks = append(rec.chunks, c.(runners.TranscriptChunk))
			return rec.emitErr
		},
		Progress: func(done, total int) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.progress = append(rec.progress, [2]int{done, total})
		},
	}
}

func runOne(t *testing.T, r *Runner, task runners.Task) (*runners.TranscriptionResult, error) {
	t.Helper()
	out := r.Run(context.Background(), []runners.Task{task})
	require.Len(t, out, 1)
	if out[0].Err != nil {
		return nil, out[0].Err
	}
	res, ok := out[0].Value.(*runners.TranscriptionResult)
	require.True(t, ok, "value %T", out[0].Value)
	return res, nil
}

func TestRunnerStreamsSegmentsWithStatistics(t *testing.T) {
	tok := largeV3(t)
	T := func(sec float64) int { return ts(tok, sec) }
	S := func(parts ...any) []int { return seq(tok, parts...) }
	de, err := tok.LanguageToken("de")
	require.NoError(t, err)
	sot, tr := tok.SOT(), tok.Transcribe()
	writeScript(t, warmupDecode,
		dec{expect: []int{sot}, emit: []int{de}}, // language detection on the first window
		dec{expect: []int{sot, de, tr}, emit: S(T(0), " Hallo.", T(2), T(2), " Welt.", T(5))},
		dec{checkProm: true, prompt: S(T(0), " Hallo.", T(2), T(2), " Welt.", T(5)), emit: S(T(0), " Ende.", T(1))},
	)
	r := newRunner(t, nil)
	rec := &recorder{}
	req := &runners.AudioRequest{Samples: make([]float32, 40*16000), SampleRate: 16000, Duration: 40, Stream: true}
	res, err := runOne(t, r, rec.task(context.Background(), req))
	require.NoError(t, err)

	require.Equal(t, "Hallo. Welt. Ende.", res.Text)
	require.Equal(t, "german", res.Language)
	require.Equal(t, "transcribe", res.Task)
	require.Equal(t, 40.0, res.Duration)
	require.Empty(t, res.Speakers)
	require.Equal(t, []runners.TranscriptChunk{{Text: "Hallo.", ChunkID: 1}, {Text: "Welt.", ChunkID: 2}, {Text: "Ende.", ChunkID: 3}}, rec.chunks)
	// Window 1 ends with a single timestamp: seek 3000, 1000 frames left (one more window).
	require.Equal(t, [][2]int{{1, 2}, {2, 2}}, rec.progress)

	want := []struct {
		seek       int
		start, end float64
		text       string
		tokens     []int
	}{
		{0, 0, 2, "Hallo.", S(T(0), " Hallo.", T(2))},
		{0, 2, 5, "Welt.", S(T(2), " Welt.", T(5))},
		{3000, 30, 31, "Ende.", S(T(0), " Ende.", T(1))},
	}
	require.Len(t, res.Segments, len(want))
	for i, w := range want {
		s := res.Segments[i]
		require.Equal(t, i, s.ID)
		require.Equal(t, "", s.Speaker)
		require.Equal(t, w.seek, s.Seek)
		require.Equal(t, w.start, s.StartTime)
		require.Equal(t, w.end, s.EndTime)
		require.Equal(t, w.text, s.Text)
		require.Equal(t, w.tokens, s.Tokens)
		require.Equal(t, 0.0, s.Temperature)
		require.Less(t, s.AvgLogprob, 0.0)
		require.Greater(t, s.AvgLogprob, -1.0)
		require.Greater(t, s.CompressionRatio, 0.0)
		require.Less(t, s.CompressionRatio, 2.4)
		require.InDelta(t, 0.01, s.NoSpeechProb, 1e-4)
	}
	require.Equal(t, res.Segments[0].AvgLogprob, res.Segments[1].AvgLogprob, "a window's figures are shared by its segments")
}

func TestRunnerPreprocessedSpeechSpans(t *testing.T) {
	tok := largeV3(t)
	T := func(sec float64) int { return ts(tok, sec) }
	S := func(parts ...any) []int { return seq(tok, parts...) }
	en, _ := tok.LanguageToken("en")
	fr, _ := tok.LanguageToken("fr")
	sot, tl := tok.SOT(), tok.Translate()
	writeScript(t, warmupDecode,
		dec{expect: []int{sot, fr, tl}, checkProm: true, emit: S(T(0), " One.", T(1.5))},
		// Each span is transcribed on its own: no prompt from the first.
		dec{expect: []int{sot, fr, tl}, checkProm: true, emit: S(T(0), " Two.", T(1))},
	)
	_ = en
	r := newRunner(t, nil)
	rec := &recorder{}
	req := &runners.AudioRequest{
		Samples: make([]float32, 15*16000), SampleRate: 16000, Duration: 15, Stream: true,
		Segments: []runners.Span{{Start: 1, End: 4}, {Start: 10, End: 12.5}},
		Language: "fr", Task: "translate",
	}
	res, err := runOne(t, r, rec.task(context.Background(), req))
	require.NoError(t, err)
	require.Equal(t, "One. Two.", res.Text)
	require.Equal(t, "french", res.Language)
	require.Equal(t, "translate", res.Task)
	require.Equal(t, []string{"SPEAKER_00"}, res.Speakers)
	require.Equal(t, 1, res.SpeakerCount)
	require.Len(t, res.Segments, 2)
	require.Equal(t, runners.TranscriptionSegment{ID: 0, Speaker: "SPEAKER_00", StartTime: 1, EndTime: 2.5, Text: "One.", Seek: 100,
		Tokens: S(T(0), " One.", T(1.5)), AvgLogprob: res.Segments[0].AvgLogprob, CompressionRatio: res.Segments[0].CompressionRatio,
		NoSpeechProb: res.Segments[0].NoSpeechProb}, res.Segments[0])
	require.Equal(t, 10.0, res.Segments[1].StartTime)
	require.Equal(t, 11.0, res.Segments[1].EndTime)
	require.Equal(t, 1000, res.Segments[1].Seek)
	require.Equal(t, []runners.TranscriptChunk{{Text: "[SPEAKER_00] One.", ChunkID: 1}, {Text: "[SPEAKER_00] Two.", ChunkID: 2}}, rec.chunks)
	require.Equal(t, [][2]int{{1, 2}, {2, 2}}, rec.progress)
}

func TestRunnerUnscripted(t *testing.T) {
	r := newRunner(t, nil)
	req := &runners.AudioRequest{Samples: audio(3), SampleRate: 16000, Duration: 3}
	res, err := runOne(t, r, runners.Task{Ctx: context.Background(), Request: req})
	require.NoError(t, err)
	require.Regexp(t, `^This is simulated speech number [a-z]+\.$`, res.Text)
	require.Equal(t, "english", res.Language, "detected: every language ties, English comes first")
	require.Len(t, res.Segments, 1)
}

func TestRunnerCancellation(t *testing.T) {
	r := newRunner(t, nil)
	req := &runners.AudioRequest{Samples: make([]float32, 70*16000), SampleRate: 16000, Duration: 70, Stream: true, Language: "en"}

	// The client goes away at the first chunk: the task stops with the emit error.
	rec := &recorder{emitErr: errors.New("client gone")}
	_, err := runOne(t, r, rec.task(context.Background(), req))
	require.ErrorContains(t, err, "client gone")
	require.Len(t, rec.chunks, 1)

	// The request is cancelled after the first window: no further window is decoded.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	task := runners.Task{Ctx: ctx, Request: req, Progress: func(done, total int) { cancel() }}
	_, err = runOne(t, r, task)
	require.ErrorIs(t, err, context.Canceled)

	// The batch context ends: the same.
	bctx, bcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer bcancel()
	<-bctx.Done()
	out := r.Run(bctx, []runners.Task{{Ctx: context.Background(), Request: req}})
	require.ErrorIs(t, out[0].Err, context.DeadlineExceeded)

	// The device is fine afterwards.
	short := &runners.AudioRequest{Samples: make([]float32, 16000), SampleRate: 16000, Duration: 1}
	res, err := runOne(t, r, runners.Task{Ctx: context.Background(), Request: short})
	require.NoError(t, err)
	require.NotEmpty(t, res.Text)
}

func TestRunnerBadRequests(t *testing.T) {
	r := newRunner(t, nil)
	tests := []struct {
		name string
		req  runners.AudioRequest
		want string
	}{
		{"unknown language", runners.AudioRequest{Language: "xx"}, "unknown language"},
		{"unknown task", runners.AudioRequest{Task: "summarize"}, "unknown task"},
		{"temperature above 1", runners.AudioRequest{Temperature: 1.5}, "temperature 1.5"},
		{"other sample rate", runners.AudioRequest{SampleRate: 8000}, "8000 Hz"},
		{"temperatures entry above 1", runners.AudioRequest{Decode: runners.DecodeOptions{Temperatures: []float64{0, 1.2}}}, "temperatures: 1.2"},
		{"infinite threshold", runners.AudioRequest{Decode: runners.DecodeOptions{LogprobThreshold: ptr(math.Inf(-1))}}, "not a finite number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Samples = make([]float32, 16000)
			_, err := runOne(t, r, runners.Task{Ctx: context.Background(), Request: &req})
			require.ErrorIs(t, err, runners.ErrBadRequest)
			require.ErrorContains(t, err, tc.want)
		})
	}
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.ImageRequest{}}})
	require.ErrorContains(t, out[0].Err, "not *runners.AudioRequest")
}

func TestRunnerLifecycle(t *testing.T) {
	cfg := Config{Tokenizer: largeV3(t), Device: DeviceOptions(ttnn.MeshShape{Rows: 1, Cols: 1}, 1_000_000)}
	r, err := New(cfg)
	require.NoError(t, err)
	req := &runners.AudioRequest{Samples: make([]float32, 16000)}
	require.ErrorIs(t, r.Run(context.Background(), []runners.Task{{Request: req}})[0].Err, ErrNotWarm)
	// The encoder and decoder traces (4 MB + 2 MB) do not fit a 1 MB trace region.
	err = r.Warmup(context.Background())
	require.ErrorIs(t, err, ttnn.ErrOutOfMemory)
	require.ErrorContains(t, err, "trace_region_size 1000000")
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Warmup(context.Background()), ErrClosed)
	require.ErrorIs(t, r.Run(context.Background(), []runners.Task{{Request: req}})[0].Err, ErrClosed)
	require.NoError(t, r.Close(), "idempotent")

	_, err = New(Config{WeightsDir: t.TempDir()})
	require.ErrorIs(t, err, ErrNoVocabulary)
}

func TestDeviceOptions(t *testing.T) {
	tests := []struct {
		name  string
		mesh  ttnn.MeshShape
		trace int
		want  ttnn.Options
	}{
		{"default trace setting", ttnn.MeshShape{}, 0,
			ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 1024, TraceRegionSize: 100_000_000, CommandQueues: 2, ProgramCache: true}},
		{"TRACE_REGION_SIZE set", ttnn.MeshShape{Rows: 1, Cols: 1}, 5_000_000,
			ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 1024, TraceRegionSize: 5_000_000, CommandQueues: 2, ProgramCache: true}},
		{"two chips", ttnn.MeshShape{Rows: 1, Cols: 2}, 0,
			ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 2}, L1SmallSize: 1024, TraceRegionSize: 100_000_000, CommandQueues: 2, ProgramCache: true, Dispatch: ttnn.DispatchEth}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, DeviceOptions(tc.mesh, tc.trace))
		})
	}
}

func TestRegisterFallsBackToTheMockRunner(t *testing.T) {
	dir := whisperDir(t)
	reg := runners.NewRegistry()
	Register(reg)
	svc, err := reg.Service(catalogue.RunnerWhisper)
	require.NoError(t, err)
	require.Equal(t, runners.ServiceAudio, svc)
	settings := func(weights string, edit func(*config.Settings)) *config.Settings {
		s := &config.Settings{ModelRunner: catalogue.RunnerWhisper, ModelWeightsPath: weights, Mock: true,
			WorkerIsolation: config.IsolationInProcess, TraceRegionSize: config.DefaultTraceRegionSize, MockAudioLatency: 20 * time.Millisecond}
		if edit != nil {
			edit(s)
		}
		return s
	}
	tests := []struct {
		name string
		s    *config.Settings
		real bool
	}{
		{"vocabulary present", settings(dir, nil), true},
		{"no MODEL_WEIGHTS_PATH", settings("", nil), false},
		{"no vocabulary in MODEL_WEIGHTS_PATH", settings(t.TempDir(), nil), false},
		{"hardware without DEVICE_BACKEND=metal", settings(dir, func(s *config.Settings) { s.Mock = false }), false},
		{"several in-process groups", settings(dir, func(s *config.Settings) { s.DeviceGroups = make([]config.DeviceGroup, 2) }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := reg.New(catalogue.RunnerWhisper, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: tc.s})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			_, isReal := r.(*Runner)
			require.Equal(t, tc.real, isReal, "runner %T", r)
			if isReal {
				c := configFor(runners.WorkerSpec{Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: tc.s})
				require.Equal(t, TraceRegionSize, c.Device.TraceRegionSize)
				require.InDelta(t, 0.02/(153.5e-3/30+3*9.524e-3), c.Device.SimLatencyScale, 1e-9)
			}
		})
	}
	// The mock fallback still transcribes.
	r, err := reg.New(catalogue.RunnerWhisper, runners.WorkerSpec{Settings: settings("", func(s *config.Settings) { s.MockWarmup, s.MockAudioLatency = 0, 0 })})
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Warmup(context.Background()))
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.AudioRequest{Samples: make([]float32, 16000), SampleRate: 16000, Duration: 1}}})
	require.NoError(t, out[0].Err)
	require.Contains(t, fmt.Sprint(out[0].Value.(*runners.TranscriptionResult).Text), "simulated transcription")
}

// TestLoadTokenizerFromHFTokenizerJSON: a weights directory with only a Hugging Face
// tokenizer.json (here spelt from multilingual.tiktoken) gives the same vocabulary.
func TestLoadTokenizerFromHFTokenizerJSON(t *testing.T) {
	want := largeV3(t)
	// GPT-2's bytes_to_unicode.
	alphabet := map[byte]rune{}
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			alphabet[byte(b)] = rune(b)
		} else {
			alphabet[byte(b)] = rune(256 + n)
			n++
		}
	}
	vocab := map[string]int{"<|endoftext|>": want.EOT()}
	for id := range want.EOT() {
		b, err := want.TokenBytes(id)
		require.NoError(t, err)
		s := make([]rune, len(b))
		for i, c := range b {
			s[i] = alphabet[c]
		}
		vocab[string(s)] = id
	}
	doc, err := json.Marshal(map[string]any{"model": map[string]any{"type": "BPE", "vocab": vocab}})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "assets", "tokenizer.json"), doc, 0o600))
	got, err := LoadTokenizer(dir, 51866)
	require.NoError(t, err)
	require.Equal(t, want.NVocab(), got.NVocab())
	for _, s := range []string{" Hello world.", " Grüße aus Köln 🙂", " 東京タワー"} {
		require.Equal(t, want.Encode(s), got.Encode(s), "%q", s)
	}

	_, err = LoadTokenizer(t.TempDir(), 51866)
	require.ErrorIs(t, err, ErrNoVocabulary)
	require.ErrorContains(t, err, "neither multilingual.tiktoken nor tokenizer.json")
}

func ptr(v float64) *float64 { return &v }

// TestRunnerDecodeOptions: HEAD's temperatures and thresholds become the transcribe loop's
// fallback schedule and thresholds; without them, whisper's defaults (the schedule from
// temperature, 2.4 / -1.0 / 0.6).
func TestRunnerDecodeOptions(t *testing.T) {
	r := newRunner(t, nil)
	opts, err := r.options(&runners.AudioRequest{Temperature: 0.2})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{0.2, 0.4, 0.6, 0.8, 1.0}, opts.Temperatures, 1e-9)
	require.Equal(t, decoding.DefaultThresholds(), opts.Thresholds)

	req := &runners.AudioRequest{Temperature: 0.2, Decode: runners.DecodeOptions{Temperatures: []float64{0, 0.5},
		CompressionRatioThreshold: ptr(2.0), LogprobThreshold: ptr(-2.0), NoSpeechThreshold: ptr(0.3)}}
	opts, err = r.options(req)
	require.NoError(t, err)
	require.Equal(t, []float64{0, 0.5}, opts.Temperatures)
	require.Equal(t, decoding.Thresholds{CompressionRatio: 2.0, LogProb: -2.0, NoSpeech: 0.3}, opts.Thresholds)
	opts.Temperatures[0] = 9 // the runner's copy, not the request's
	require.Equal(t, 0.0, req.Decode.Temperatures[0])
}

// TestRegisterOnMetalNeverFallsBack: with DEVICE_BACKEND=metal the factory builds the real
// runner over MODEL_WEIGHTS_PATH's .ttnn files or fails naming what is missing; it never hands
// a Tenstorrent user the simulated runner. (Loading and serving run over the fake runtime in
// metal_test.go, -tags ttnn.)
func TestRegisterOnMetalNeverFallsBack(t *testing.T) {
	vocab := filepath.Join(whisperDir(t), "multilingual.tiktoken")
	reg := runners.NewRegistry()
	Register(reg)
	weights := func(vocabulary bool, programs ...string) string {
		dir := t.TempDir()
		if vocabulary {
			require.NoError(t, os.Symlink(vocab, filepath.Join(dir, "multilingual.tiktoken")))
		}
		for _, p := range programs {
			require.NoError(t, os.WriteFile(filepath.Join(dir, p+".ttnn"), nil, 0o600)) // only looked for here
		}
		return dir
	}
	both := []string{EncoderProgram, DecoderProgram}
	for _, tc := range []struct {
		name, weights string
		maxBatch      int
		err           string
	}{
		{"MODEL_WEIGHTS_PATH unset", "", 1, "MODEL_WEIGHTS_PATH is not set"},
		{"no programs", weights(true), 1, "MODEL_WEIGHTS_PATH has no whisper-encoder.ttnn"},
		{"no decoder step", weights(true, EncoderProgram), 1, "MODEL_WEIGHTS_PATH has no whisper-decoder-step.ttnn"},
		{"batched, no step at all", weights(true, EncoderProgram), 4, "MODEL_WEIGHTS_PATH has no whisper-decoder-step.ttnn"},
		{"no vocabulary", weights(false, both...), 1, "no vocabulary"},
		{"programs and vocabulary", weights(true, both...), 1, ""},
		{"batched, the -b4 step", weights(true, EncoderProgram, BatchProgram(4)), 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &config.Settings{ModelRunner: catalogue.RunnerWhisper, DeviceBackend: config.BackendMetal, ModelWeightsPath: tc.weights,
				WorkerIsolation: config.IsolationProcess, TraceRegionSize: config.DefaultTraceRegionSize, MaxBatchSize: tc.maxBatch}
			r, err := reg.New(catalogue.RunnerWhisper, runners.WorkerSpec{WorkerID: "0", Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: s})
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			wr, ok := r.(*Runner)
			require.True(t, ok, "the real runner, not %T", r)
			require.Equal(t, config.BackendMetal, wr.cfg.Backend)
			require.Nil(t, wr.cfg.Parent, "its own device: the server's parent mesh is the simulator's")
			require.Equal(t, L1SmallSize, wr.cfg.Device.L1SmallSize)
			require.Equal(t, TraceRegionSize, wr.cfg.Device.TraceRegionSize)
		})
	}
}
