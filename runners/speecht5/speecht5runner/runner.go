// Package speecht5runner is the runners.Runner of SpeechT5 text-to-speech (MODEL_RUNNER=tt-speecht5-tts,
// and MODEL_RUNNER=mock with MODEL_SERVICE=text_to_speech): HEAD's host pipeline
// (runners/speecht5/speecht5pipeline) over the simulated SpeechT5 device (runners/speecht5/simvoice),
// whose programs spend their time on the simulated device (runners/simdev) — an encoder per
// bucket, the traced decoder step, the postnet and the vocoder, scaled so that one decoder step
// takes MOCK_TTS_STEP_SECONDS. The tokenizer is MODEL_WEIGHTS_PATH's spm_char.model and the
// speaker table its speaker_embeddings.npy (runners/speecht5/voices); without them, the
// built-in ones. DEVICE_BACKEND=metal is refused: no compiled SpeechT5 programs exist yet
// (DEVICE_BACKEND=python runs HEAD's own runner instead).
package speecht5runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/simvoice"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/speecht5pipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/speecht5tokenizer"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/voices"
)

// programMS are the manifests' latencies (ttnn/programs/speecht5-*.ttbsim), for the Go-sleep
// fallback where no simulated device is open.
var programMS = map[string]float64{
	"speecht5-encoder-32": 4.0, "speecht5-encoder-64": 5.0, "speecht5-encoder-128": 7.0,
	"speecht5-encoder-160": 8.0, "speecht5-encoder-192": 9.0, "speecht5-encoder-256": 11.0,
	simvoice.ProgDecoder: 6.0, simvoice.ProgPostnet: 0.5, simvoice.ProgVocoder: 20.0,
}

// StreamLeadChars caps a streamed request's first chunk (pipeline.FirstChunkChars): 48
// characters, about three seconds of speech, so the first audio comes as soon for a long text as
// for a sentence.
const StreamLeadChars = 48

// StreamLeadSteps is a streamed request's lead (pipeline.LeadSteps): the first chunk's audio is
// vocoded after 24 decoder steps (48 mel frames, 0.77 s of speech), so the time to the first
// audio is the encoder, 24 steps and one vocoder run for any text; the rest of a ≤ 48-character
// first chunk (≤ about 110 steps) is vocoded before those 0.77 s have played at the device's
// step time.
const StreamLeadSteps = 24

// model is the catalogue's SpeechT5.
var model, _ = runners.Lookup(catalogue.RunnerSpeechT5, nil)

// Register adds tt-speecht5-tts to reg.
func Register(reg *runners.Registry) { reg.Register(catalogue.RunnerSpeechT5, Factory, Factory) }

// Config configures a runner.
type Config struct {
	Tok    *speecht5tokenizer.Tokenizer
	Voices *voices.Table
	// Step is the time of one decoder step with its postnet (MOCK_TTS_STEP_SECONDS).
	Step time.Duration
	// Warmup is MOCK_WARMUP_SECONDS.
	Warmup time.Duration
	Logger *slog.Logger
	// OnStep, when not nil, is told after every decoder step (tests wait on it).
	OnStep func(chunk, step int)
}

// Runner is SpeechT5 on one device group.
type Runner struct {
	cfg    Config
	dev    simdev.Stepper
	scale  float64
	closed atomic.Bool
	log    *slog.Logger
}

// Factory builds the runner of a worker from the settings.
func Factory(spec runners.WorkerSpec) (runners.Runner, error) {
	s := spec.Settings
	if s == nil {
		s = &config.Settings{Mock: true}
	}
	if s.DeviceBackend == config.BackendMetal {
		return nil, runners.Permanent(errors.New("tt-speecht5-tts: DEVICE_BACKEND=metal has no compiled SpeechT5 programs yet (use DEVICE_BACKEND=python to run HEAD's runner, or the simulator)"))
	}
	cfg := Config{Step: s.MockSpeechStep, Warmup: s.MockWarmup}
	var err error
	if cfg.Tok, cfg.Voices, err = Load(s.ModelWeightsPath); err != nil {
		return nil, runners.Permanent(err)
	}
	r := New(cfg)
	r.dev.Cfg = simdev.ConfigFor(catalogue.RunnerSpeechT5, spec)
	return r, nil
}

// Load reads the tokenizer and speaker table of dir; missing files (or dir "") give the
// built-in ones, other errors are returned.
func Load(dir string) (*speecht5tokenizer.Tokenizer, *voices.Table, error) {
	tok, table := speecht5tokenizer.Builtin(), voices.Builtin()
	if dir == "" {
		return tok, table, nil
	}
	if _, err := os.Stat(filepath.Join(dir, speecht5tokenizer.ModelFile)); err == nil {
		if tok, err = speecht5tokenizer.Load(dir); err != nil {
			return nil, nil, err
		}
	}
	table, err := voices.ForWeights(dir)
	if err != nil {
		return nil, nil, err
	}
	return tok, table, nil
}

// New returns a runner that keeps its time with Go sleeps (no simulated device).
func New(cfg Config) *Runner {
	if cfg.Tok == nil {
		cfg.Tok = speecht5tokenizer.Builtin()
	}
	if cfg.Voices == nil {
		cfg.Voices = voices.Builtin()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	scale := 0.0
	if unit := model.Sim.UnitSeconds; unit > 0 {
		scale = cfg.Step.Seconds() / unit
	}
	return &Runner{cfg: cfg, scale: scale, log: log}
}

// Voices is the runner's speaker table.
func (r *Runner) Voices() *voices.Table { return r.cfg.Voices }

// Spend runs program n times on the simulated device, or sleeps its scaled latency.
func (r *Runner) Spend(ctx context.Context, program string, n int) error {
	d := time.Duration(float64(n) * programMS[program] * r.scale * float64(time.Millisecond))
	return r.dev.Run(ctx, program, n, d)
}

// Warmup opens the device and speaks one short text, as HEAD's warm-up runs the pipeline.
func (r *Runner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return simdev.ErrClosed
	}
	if err := simdev.Sleep(ctx, r.cfg.Warmup); err != nil {
		return fmt.Errorf("speecht5 warm-up: %w", err)
	}
	if err := r.dev.Open(ctx); err != nil {
		return fmt.Errorf("speecht5 warm-up: %w", err)
	}
	if _, err := r.speak(ctx, &runners.SpeechRequest{Text: "Warm up."}, nil, nil); err != nil {
		return fmt.Errorf("speecht5 warm-up inference: %w", err)
	}
	return nil
}

// Run speaks each task in turn (HEAD's runner serves one request per batch; MAX_BATCH_SIZE is 1).
func (r *Runner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	if r.closed.Load() {
		return simdev.ClosedOutcomes(len(tasks))
	}
	out := make([]runners.Outcome, len(tasks))
	for i, t := range tasks {
		tctx := t.Ctx
		if tctx == nil {
			tctx = ctx
		}
		tctx, cancel := context.WithCancel(tctx)
		stop := context.AfterFunc(ctx, cancel)
		req, err := runners.RequestAs[*runners.SpeechRequest](t)
		if err == nil {
			var res *runners.SpeechResult
			res, err = r.speak(tctx, req, t.Emit, t.Progress)
			out[i] = runners.Outcome{Value: res}
		}
		stop()
		cancel()
		if err != nil {
			out[i] = runners.Outcome{Err: err}
		}
	}
	return out
}

// speak resolves the speaker and runs the pipeline. progress (may be nil) is told the decoder
// steps done after each one — the scheduler's cancel watch reads it (the metric
// tt_media_server_steps_after_cancel: a cancelled request's steps after its cancel); the total
// is not known before the stop rule fires, so it is given as done+1.
func (r *Runner) speak(ctx context.Context, req *runners.SpeechRequest, emit func(runners.Chunk) error, progress func(done, total int)) (*runners.SpeechResult, error) {
	emb, id := req.Embedding, ""
	if emb == nil {
		id = req.SpeakerID
		if id == "" {
			id = r.cfg.Voices.DefaultID()
		}
		var err error
		if emb, err = r.cfg.Voices.Embedding(id); err != nil {
			return nil, &simdev.BadRequest{Msg: "speaker_id: " + err.Error()}
		}
	} else if len(emb) != runners.SpeechEmbeddingDim {
		return nil, &simdev.BadRequest{Msg: fmt.Sprintf("speaker_embedding: %d floats, want %d", len(emb), runners.SpeechEmbeddingDim)}
	}
	lastStep, done := [2]int{}, 0
	p := &speecht5pipeline.Pipeline{Tok: r.cfg.Tok, Dev: &simvoice.Device{Timer: r, Speaker: emb},
		OnStep: func(chunk, step int) {
			lastStep = [2]int{chunk, step}
			done++
			if progress != nil {
				progress(done, done+1)
			}
			if r.cfg.OnStep != nil {
				r.cfg.OnStep(chunk, step)
			}
		}}
	var send func(speecht5pipeline.ChunkAudio) error
	if req.Stream && emit != nil {
		p.FirstChunkChars, p.LeadSteps = StreamLeadChars, StreamLeadSteps
		send = func(c speecht5pipeline.ChunkAudio) error {
			return emit(&runners.SpeechChunk{Index: c.Index, Chunks: c.Chunks, Samples: c.Samples, SampleRate: speecht5pipeline.SampleRate})
		}
	}
	res, err := p.Generate(ctx, req.Text, send)
	if err != nil {
		if ctx.Err() != nil {
			r.log.Info("speecht5: request cancelled; decoder loop stopped", "chunk", lastStep[0], "step", lastStep[1], "err", ctx.Err())
		}
		return nil, err
	}
	return &runners.SpeechResult{Samples: res.Samples, SampleRate: speecht5pipeline.SampleRate, SpeakerID: id,
		Chunks: res.Chunks, Steps: res.Steps, Tokens: res.Tokens}, nil
}

// Close releases the device.
func (r *Runner) Close() error {
	r.closed.Store(true)
	return r.dev.Close()
}
