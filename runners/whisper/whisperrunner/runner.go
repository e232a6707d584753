// Package whisperrunner is the runners.Runner of the real Whisper pipeline (MODEL_RUNNER=tt-whisper)
// on a ttnn device: it loads the vocabulary from MODEL_WEIGHTS_PATH, opens the device with
// the Python runner's options at warm-up, loads the encoder and the traced decoder step
// (model.go: transcribe.Model on the bridge), and serves transcription requests with
// openai/whisper's long-form loop (runners/whisper/transcribe): language detection or the
// requested language, transcribe or translate, the prompt, the temperature fallback schedule
// from the request's temperature, per-segment decoder statistics, a streamed chunk per
// segment as soon as it is final, progress per window, and cancellation between decoder
// steps and windows. With MAX_BATCH_SIZE above 1 a scheduler batch's requests run together,
// one lane each, their decoder steps batched into one device step per token (batch.go). With
// pre-processing on, each speech span is transcribed on its own and
// its segments are re-based to the file. There are no word timestamps: the device programs
// return no cross-attention weights.
//
// Register adds tt-whisper to a registry: without a vocabulary in MODEL_WEIGHTS_PATH, or where
// the simulator cannot serve the worker, its factory falls back to the family's simulated
// runner (runners/whisper/simaudio), so transcription works on a fresh machine. With
// DEVICE_BACKEND=metal the programs are the .ttnn files of MODEL_WEIGHTS_PATH, checked against
// their declarations (source.go), and nothing falls back.
package whisperrunner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/segment"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Errors of this package.
var (
	// ErrNoVocabulary: the weights directory has no whisper vocabulary file.
	ErrNoVocabulary = errors.New("whisper runner: no vocabulary (multilingual.tiktoken, gpt2.tiktoken or tokenizer.json) in the weights directory")
	// ErrClosed is returned by a runner used after Close.
	ErrClosed = errors.New("whisper runner closed")
	// ErrNotWarm is returned by Run before a successful Warmup.
	ErrNotWarm = errors.New("whisper runner not warmed up")
)

// model is Whisper's catalogue entry: the Python Whisper runner's device options (tt-metal's
// Whisper demo) and the simulator latencies MOCK_AUDIO_SECONDS_PER_SECOND maps onto.
var model, _ = runners.Lookup(catalogue.RunnerWhisper, nil)

// Device options of the Python Whisper runner, from the catalogue.
var (
	L1SmallSize     = model.Device.L1SmallSize
	TraceRegionSize = model.Device.TraceRegionSize
	CommandQueues   = model.Device.CommandQueues
)

// speaker labels the segments of pre-processed (VAD) requests, as the simulated diarization.
const speaker = "SPEAKER_00"

// Config configures one runner.
type Config struct {
	// WeightsDir holds the vocabulary (multilingual.tiktoken or gpt2.tiktoken, or a Hugging
	// Face tokenizer.json, at its top or in assets/), unless Tokenizer is set.
	WeightsDir string
	// Tokenizer, when not nil, is used instead of loading one from WeightsDir.
	Tokenizer *whispertokenizer.Tokenizer
	// Backend is the ttnn backend ("" = "sim"). With "metal" the device programs are the
	// tt-mlir binaries <WeightsDir>/<program>.ttnn (docs/DEVICE-PROGRAMS.md), checked against
	// their declarations in runners/programs, and Programs is not used.
	Backend string
	// Device are the device open options; DeviceOptions gives the Python runner's.
	Device ttnn.Options
	// Parent, when not nil, is the server's parent mesh: the runner opens the submesh of
	// Device.DeviceIDs (in process); nil opens a device of its own.
	Parent *ttnn.Device
	// Programs holds the simulator's encoder and decoder-step manifests; nil means
	// ttnn.SimPrograms().
	Programs fs.FS
	// Seed seeds sampling at temperatures above 0.
	Seed uint64
	// Logger may be nil.
	Logger *slog.Logger
	// MaxBatchSize (MAX_BATCH_SIZE) above 1 runs a scheduler batch's tasks together, up to
	// this many windows per decoder device step (BatchModel); 0 or 1 runs them one by one.
	MaxBatchSize int
}

// DeviceOptions returns the Python Whisper runner's device options on mesh (the catalogue's:
// l1_small_size 1024, a 100 MB trace region, two command queues, ethernet dispatch on a
// multi-chip mesh); traceRegion > 0 is a TRACE_REGION_SIZE that was set, and replaces the
// model's region.
func DeviceOptions(mesh ttnn.MeshShape, traceRegion int) ttnn.Options {
	return simdev.Options(model, &config.Settings{TraceRegionSize: traceRegion, TraceRegionSizeSet: traceRegion > 0}, mesh)
}

// LoadTokenizer loads the vocabulary of an n_vocab model from dir (or dir/assets): the
// tiktoken ranks file whispertokenizer.ConfigForVocabSize names (openai/whisper's assets), or else a
// Hugging Face tokenizer.json. Neither present is ErrNoVocabulary.
func LoadTokenizer(dir string, nVocab int) (*whispertokenizer.Tokenizer, error) {
	cfg, err := whispertokenizer.ConfigForVocabSize(nVocab)
	if err != nil {
		return nil, fmt.Errorf("whisper runner: %w", err)
	}
	if dir == "" {
		return nil, fmt.Errorf("%w (no directory given)", ErrNoVocabulary)
	}
	dirs := []string{dir, filepath.Join(dir, "assets")}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, cfg.RanksFile())); err == nil {
			tok, err := whispertokenizer.Load(d, cfg)
			if err != nil {
				return nil, fmt.Errorf("whisper runner: vocabulary: %w", err)
			}
			return tok, nil
		}
	}
	for _, d := range dirs {
		path := filepath.Join(d, "tokenizer.json")
		if _, err := os.Stat(path); err == nil {
			ranks, err := whispertokenizer.LoadHFTokenizerFile(path)
			if err != nil {
				return nil, fmt.Errorf("whisper runner: vocabulary: %w", err)
			}
			tok, err := whispertokenizer.New(ranks, cfg)
			if err != nil {
				return nil, fmt.Errorf("whisper runner: vocabulary: %w", err)
			}
			return tok, nil
		}
	}
	return nil, fmt.Errorf("%w: neither %s nor tokenizer.json in %s or its assets/", ErrNoVocabulary, cfg.RanksFile(), dir)
}

var _ runners.Runner = (*Runner)(nil)

// Runner is the Whisper runner of one device group.
type Runner struct {
	cfg Config
	tok *whispertokenizer.Tokenizer
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	dev    *ttnn.Device
	model  *Model      // MaxBatchSize <= 1
	batch  *BatchModel // MaxBatchSize > 1
	nMels  int
}

// New checks the programs and loads the vocabulary; the device is opened by Warmup.
func New(cfg Config) (*Runner, error) {
	if cfg.Programs == nil {
		cfg.Programs = ttnn.SimPrograms()
	}
	if cfg.Backend == "" {
		cfg.Backend = "sim"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src := simSource(cfg.Programs)
	if cfg.Backend == config.BackendMetal {
		if err := MetalFiles(cfg.WeightsDir, cfg.MaxBatchSize); err != nil {
			return nil, err
		}
		src = metalSource(cfg.WeightsDir)
	}
	nVocab, err := src.vocab()
	if err != nil {
		return nil, err
	}
	tok := cfg.Tokenizer
	if tok == nil {
		if tok, err = LoadTokenizer(cfg.WeightsDir, nVocab); err != nil {
			return nil, err
		}
	}
	if tok.NVocab() != nVocab {
		return nil, fmt.Errorf("whisper runner: the vocabulary has %d tokens, the decoder program %d", tok.NVocab(), nVocab)
	}
	return &Runner{cfg: cfg, tok: tok, log: log}, nil
}

// Tokenizer is the runner's vocabulary.
func (r *Runner) Tokenizer() *whispertokenizer.Tokenizer { return r.tok }

// Warmup opens the device, loads the model (capturing its traces) and transcribes one second
// of silence in English, as the Python runner's warm-up does.
func (r *Runner) Warmup(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.dev != nil {
		return nil
	}
	defer func() {
		if err != nil {
			_ = r.closeDevice()
			err = fmt.Errorf("%s warm-up: %w", catalogue.RunnerWhisper, err)
		}
	}()
	if err := ttnn.Init(r.cfg.Backend); err != nil {
		return fmt.Errorf("device backend: %w", err)
	}
	opts := r.cfg.Device
	if r.dev, err = simdev.OpenDevice(ctx, r.cfg.Parent, opts); err != nil {
		return fmt.Errorf("open device (mesh %v, l1_small_size %d, trace_region_size %d, %d CQ): %w",
			opts.Mesh, opts.L1SmallSize, opts.TraceRegionSize, opts.CommandQueues, simdev.DeviceErr(err))
	}
	var model transcribe.Model
	traced, sizes := false, []int{1}
	metal := r.cfg.Backend == config.BackendMetal
	if r.cfg.MaxBatchSize > 1 {
		if metal {
			r.batch, err = LoadMetalBatchModel(ctx, r.dev, r.cfg.WeightsDir, r.cfg.MaxBatchSize)
		} else {
			r.batch, err = LoadBatchModel(ctx, r.dev, r.cfg.Programs, r.cfg.MaxBatchSize)
		}
		if err != nil {
			return simdev.DeviceErr(err)
		}
		r.nMels, traced, sizes = r.batch.NMels(), r.batch.Traced(), r.batch.Sizes()
		r.batch.Begin(0)
		defer r.batch.Finish(0)
		model = r.batch.Lane(0)
	} else {
		if metal {
			r.model, err = LoadMetalModel(ctx, r.dev, r.cfg.WeightsDir)
		} else {
			r.model, err = LoadModel(ctx, r.dev, r.cfg.Programs)
		}
		if err != nil {
			return simdev.DeviceErr(err)
		}
		r.nMels, traced, model = r.model.NMels(), r.model.Traced(), r.model
	}
	warm := &runners.AudioRequest{Samples: make([]float32, segment.SampleRate), SampleRate: segment.SampleRate, Duration: 1, Language: "en"}
	if _, err := r.transcribe(ctx, model, runners.Task{Ctx: ctx, Request: warm}, warm); err != nil {
		return fmt.Errorf("warm-up inference: %w", err)
	}
	info := r.dev.Info()
	r.log.Info("whisper runner ready", "backend", info.Backend, "mesh", info.Mesh, "n_vocab", r.tok.NVocab(), "n_mels", r.nMels, "traced", traced, "batch_sizes", sizes)
	return nil
}

// Run transcribes the tasks: with MaxBatchSize above 1 up to BatchModel.Rows() of them at
// once, each on its own lane of batched decoder steps, else one after the other. Each task
// runs under its own context, also ended by ctx; one task's end does not stop the others.
func (r *Runner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runners.Outcome, len(tasks))
	switch {
	case r.closed:
		for i := range out {
			out[i].Err = ErrClosed
		}
	case r.model == nil && r.batch == nil:
		for i := range out {
			out[i].Err = ErrNotWarm
		}
	case r.batch != nil:
		for lo := 0; lo < len(tasks); lo += r.batch.Rows() {
			hi := min(len(tasks), lo+r.batch.Rows())
			var wg sync.WaitGroup
			for i := lo; i < hi; i++ {
				row := i - lo
				r.batch.Begin(row)
				wg.Go(func() {
					defer r.batch.Finish(row)
					out[i] = r.runTask(ctx, r.batch.Lane(row), tasks[i])
				})
			}
			wg.Wait()
		}
	default:
		for i, t := range tasks {
			out[i] = r.runTask(ctx, r.model, t)
		}
	}
	return out
}

func (r *Runner) runTask(ctx context.Context, model transcribe.Model, t runners.Task) (o runners.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = runners.Outcome{Err: fmt.Errorf("%s: panic: %v", catalogue.RunnerWhisper, p)}
		}
	}()
	req, err := runners.RequestAs[*runners.AudioRequest](t)
	if err != nil || req == nil {
		return runners.Outcome{Err: fmt.Errorf("%s: request is %T, not *runners.AudioRequest", catalogue.RunnerWhisper, t.Request)}
	}
	parent := t.Ctx
	if parent == nil {
		parent = context.Background()
	}
	tctx, cancel := context.WithCancel(parent)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if ctx.Err() != nil {
		// AfterFunc calls cancel in a goroutine of its own, perhaps only after the whole
		// transcription: a batch context that has already ended ends the task now.
		cancel()
	}
	res, err := r.transcribe(tctx, model, t, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && parent.Err() == nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", err, ctxErr)
		}
		return runners.Outcome{Err: err}
	}
	return runners.Outcome{Value: res}
}

// Close releases the model and the device; it is idempotent.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.closeDevice()
}

func (r *Runner) closeDevice() error {
	var errs []error
	if r.model != nil {
		errs = append(errs, r.model.Close())
		r.model = nil
	}
	if r.batch != nil {
		errs = append(errs, r.batch.Close())
		r.batch = nil
	}
	if r.dev != nil {
		if err := r.dev.Close(); err != nil && !errors.Is(err, ttnn.ErrDeviceLost) && !errors.Is(err, ttnn.ErrTimeout) {
			errs = append(errs, err)
		}
		r.dev = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: close: %w", catalogue.RunnerWhisper, err)
	}
	return nil
}
