package wan

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	xdraw "golang.org/x/image/draw"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/i2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// PipelineFactory is tt-wan2.2's factory: in mock-device mode, when MODEL_WEIGHTS_PATH holds
// the UMT5 tokenizer (tokenizer/spiece.model or tokenizer/tokenizer.json) and this worker can
// open the simulator, the Wan2.2 T2V host pipeline (runners/wan/t2v) over the declared
// wan22-t2v-* programs on the simulator; otherwise fallback (the simulated runner), logged
// with the reason. With DEVICE_BACKEND=metal (a `ttnn` build) it is always the host pipeline
// over MODEL_WEIGHTS_PATH's .ttnn programs (metalPipeline), never the simulated runner.
func PipelineFactory(model string, fallback runners.Factory) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		s := spec.Settings
		if s != nil && s.DeviceBackend == config.BackendMetal && !s.Mock {
			return metalPipeline(model, spec), nil
		}
		why := runners.SimPipelineBlocker(s, spec.Parent != nil)
		tok := ""
		if why == "" {
			if tok = TokenizerPath(s.ModelWeightsPath); tok == "" {
				why = "MODEL_WEIGHTS_PATH has no tokenizer/spiece.model or tokenizer/tokenizer.json"
			}
		}
		if why != "" {
			slog.Info("wan runner: using the simulated video runner", "runner", model, "worker", spec.WorkerID, "reason", why)
			return fallback(spec)
		}
		entry, ok := runners.Lookup(model, s)
		if !ok || entry.Video == nil {
			return nil, fmt.Errorf("%w %q: not a video model", runners.ErrUnknownRunner, model)
		}
		tk, err := umt5.Load(tok)
		if err != nil {
			return nil, runners.Permanent(err)
		}
		mesh := ttnn.MeshShape{Rows: spec.Mesh.Rows, Cols: spec.Mesh.Cols}
		opts := simdev.Options(entry, s, mesh)
		// A Galaxy-class mesh renders 1280x720 (the catalogue's size rule) with its own set;
		// an I2V model runs the wan22-i2v sets (runners/wan/i2v).
		set, prefix, unit := t2v.Programs(), t2v.Prefix480, entry.Sim.PipelineUnit()
		large := false
		if w, _ := entry.Video.Size(mesh.Chips()); w == t2v.Width720 {
			prefix, unit, large = t2v.Prefix720, catalogue.Wan22GuidedStepGalaxy, true
		}
		if entry.Video.I2V {
			set, prefix = i2vSet(large)
		}
		if s.Video.MockScale > 1 {
			// MOCK_VIDEO_SCALE: the clip is computed at the smaller size the server asks for.
			var err error
			if set, err = scaledPrograms(set, prefix, s.Video.MockScale); err != nil {
				return nil, runners.Permanent(err)
			}
		}
		// The simulator's time follows MOCK_STEP_SECONDS per denoising step (two expert runs).
		opts.SimLatencyScale = ttnn.SimScale(runners.MockLatency(entry, s).Seconds(), unit)
		if spec.Parent != nil {
			opts.DeviceIDs = spec.Devices
		}
		slog.Info("wan runner: Wan2.2 pipeline on the simulator", "runner", model, "worker", spec.WorkerID, "tokenizer", tok, "programs", prefix)
		return &PipelineRunner{model: entry.Name, fps: entry.Video.FPS, tok: tk, opts: opts, parent: spec.Parent, programs: set, prefix: prefix,
			i2v: entry.Video.I2V}, nil
	}
}

// metalPipeline is tt-wan2.2's runner of a worker on the metal backend: the host pipeline over
// the .ttnn programs of MODEL_WEIGHTS_PATH (wan22-t2v-* on a 2x4 mesh, wan22-t2v-720p-* on a
// Galaxy-class one, as the catalogue's size rule says), on a device of its own with the
// catalogue's options (the server's in-process parent mesh is the simulator's). What stops it
// (no weights directory, no tokenizer) fails the worker's warm-up as a configuration error, not
// retried; so does a program that is missing, differs from its declaration or is declared for
// another mesh (t2v.NewMetalDevice).
func metalPipeline(model string, spec runners.WorkerSpec) runners.Runner {
	s := spec.Settings
	fail := func(format string, args ...any) runners.Runner {
		return &simdev.FailedRunner{Err: runners.Permanent(fmt.Errorf("%s on DEVICE_BACKEND=metal: "+format, append([]any{model}, args...)...))}
	}
	entry, ok := runners.Lookup(model, s)
	switch {
	case !ok || entry.Video == nil:
		return fail("not a video model")
	case entry.Video.I2V:
		return fail("the Wan2.2 I2V programs have no metal path yet (runners/wan/i2v runs on the simulator; DEVICE_BACKEND=python runs HEAD's class)")
	case s.ModelWeightsPath == "":
		return fail("MODEL_WEIGHTS_PATH is not set (it must hold tokenizer/spiece.model and the .ttnn programs, docs/DEVICE-PROGRAMS.md)")
	}
	tok := TokenizerPath(s.ModelWeightsPath)
	if tok == "" {
		return fail("MODEL_WEIGHTS_PATH %s has no tokenizer/spiece.model or tokenizer/tokenizer.json (the UMT5 tokenizer)", s.ModelWeightsPath)
	}
	tk, err := umt5.Load(tok)
	if err != nil {
		return fail("%w", err)
	}
	mesh := ttnn.MeshShape{Rows: spec.Mesh.Rows, Cols: spec.Mesh.Cols}
	opts := simdev.Options(entry, s, mesh)
	opts.SimLatencyScale = 0
	if s.WorkerIsolation != config.IsolationProcess && len(spec.Devices) >= opts.Mesh.Chips() {
		opts.DeviceIDs = append([]int(nil), spec.Devices[:opts.Mesh.Chips()]...)
	}
	prefix := t2v.Prefix480
	if w, _ := entry.Video.Size(opts.Mesh.Chips()); w == t2v.Width720 {
		prefix = t2v.Prefix720
	}
	slog.Info("wan runner: Wan2.2 T2V pipeline on the metal backend", "runner", model, "worker", spec.WorkerID,
		"weights", s.ModelWeightsPath, "programs", prefix, "mesh", opts.Mesh)
	return &PipelineRunner{model: entry.Name, fps: entry.Video.FPS, tok: tk, opts: opts, prefix: prefix,
		backend: config.BackendMetal, weights: s.ModelWeightsPath, decl: programs.Lookup}
}

// TokenizerPath is the UMT5 tokenizer file under weights ("" when there is none).
func TokenizerPath(weights string) string {
	if weights == "" {
		return ""
	}
	for _, name := range []string{"spiece.model", "tokenizer.json"} {
		p := filepath.Join(weights, "tokenizer", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// PipelineRunner is the Wan2.2 T2V host pipeline on a ttnn device (the simulator's manifests,
// or the metal backend's .ttnn files): Warmup opens the device and loads the programs, Run renders one clip per task with progress after every
// step, stopping at the next step when its task is cancelled.
type PipelineRunner struct {
	model    string
	fps      int
	tok      *umt5.Tokenizer
	opts     ttnn.Options
	parent   *ttnn.Device
	programs fs.FS
	prefix   string
	// i2v: the set is an image-to-video one (runners/wan/i2v's pipeline, images required).
	i2v bool
	// backend is config.BackendMetal for the .ttnn programs of weights, checked against decl
	// (t2v.NewMetalDevice); otherwise the simulator's manifests in programs.
	backend string
	weights string
	decl    t2v.Declarations

	mu     sync.Mutex
	dev    *ttnn.Device
	td     *t2v.TTNNDevice
	pipe   *t2v.Pipeline
	ipipe  *i2v.Pipeline
	closed bool
}

// NewPipelineRunner is a PipelineRunner over the programs of prefix (t2v.Prefix480 or
// Prefix720) in programs (t2v.Programs() or a test's smaller set) with device options opts.
func NewPipelineRunner(model string, fps int, tok *umt5.Tokenizer, opts ttnn.Options, programs fs.FS, prefix string) *PipelineRunner {
	return &PipelineRunner{model: model, fps: fps, tok: tok, opts: opts, programs: programs, prefix: prefix}
}

// Warmup opens the device, loads the programs and renders HEAD's warm-up clip (2 steps).
func (r *PipelineRunner) Warmup(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return simdev.ErrClosed
	}
	if r.pipe != nil || r.ipipe != nil {
		return nil
	}
	defer func() {
		if err != nil {
			_ = r.closeDevice()
			err = fmt.Errorf("%s warm-up: %w", r.model, err)
		}
	}()
	backend := config.BackendSim
	if r.backend == config.BackendMetal {
		backend = config.BackendMetal
	}
	if err := ttnn.Init(backend); err != nil {
		return fmt.Errorf("device backend: %w", err)
	}
	if r.dev, err = simdev.OpenDevice(ctx, r.parent, r.opts); err != nil {
		return fmt.Errorf("open device (mesh %v): %w", r.opts.Mesh, simdev.DeviceErr(err))
	}
	if backend == config.BackendMetal {
		r.td, err = t2v.NewMetalDevice(ctx, r.dev, r.weights, r.prefix, r.decl)
	} else {
		r.td, err = t2v.NewTTNNDevice(ctx, r.dev, r.programs, r.prefix)
	}
	if err != nil {
		return err
	}
	if r.i2v {
		return r.warmI2V(ctx)
	}
	if r.pipe, err = t2v.New(r.td, r.tok, t2v.Wan22Config()); err != nil {
		return err
	}
	_, err = r.pipe.Generate(ctx, t2v.Request{Prompt: "Sunrise on a beach", Steps: 2}, t2v.Hooks{})
	return err
}

// Stats returns the device's program runs (zero before Warmup).
func (r *PipelineRunner) Stats() t2v.TTNNStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.td == nil {
		return t2v.TTNNStats{}
	}
	return r.td.Stats()
}

// Run renders one clip per task (each task's context and the batch's stop it).
func (r *PipelineRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return simdev.ClosedOutcomes(len(tasks))
	}
	return simdev.RunBatch(ctx, tasks, func(ctx context.Context, t runners.Task) (runners.Result, error) {
		if r.pipe == nil && r.ipipe == nil {
			return nil, fmt.Errorf("%s: the runner is not warmed up", r.model)
		}
		res, err := r.generate(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.model, err)
		}
		return res, nil
	})
}

func (r *PipelineRunner) generate(ctx context.Context, t runners.Task) (*runners.VideoResult, error) {
	req, err := runners.RequestAs[*runners.VideoRequest](t)
	if err != nil || req == nil {
		return nil, fmt.Errorf("request is %T, not *runners.VideoRequest", t.Request)
	}
	if len(req.Images) > 0 && !r.i2v {
		return nil, &simdev.BadRequest{Msg: r.model + ": image_prompts: the Wan2.2 T2V pipeline takes no images"}
	}
	if req.Width <= 0 || req.Height <= 0 || req.Frames <= 0 {
		return nil, &simdev.BadRequest{Msg: fmt.Sprintf("%s: clip size %dx%d with %d frames", r.model, req.Width, req.Height, req.Frames)}
	}
	steps := max(req.Steps, 1)
	progress := func(done int) error {
		if t.Progress != nil {
			t.Progress(done, steps)
		}
		if t.Emit != nil {
			return t.Emit(runners.VideoProgress{Done: done, Total: steps})
		}
		return nil
	}
	if err := progress(0); err != nil {
		return nil, err
	}
	hooks := t2v.Hooks{Step: func(done, _ int) error { return progress(done) }}
	var frames [][]byte
	var sh t2v.Shape
	if r.i2v {
		frames, sh, err = r.generateI2V(ctx, req, steps, hooks)
	} else {
		sh = r.pipe.Shape()
		frames, err = r.pipe.Generate(ctx, t2v.Request{Prompt: req.Prompt, NegativePrompt: req.NegativePrompt, Steps: steps,
			Seed: uint64(req.Seed)}, hooks)
	}
	if errors.Is(err, t2v.ErrRequest) || errors.Is(err, i2v.ErrRequest) {
		return nil, &simdev.BadRequest{Msg: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	return &runners.VideoResult{Width: req.Width, Height: req.Height, FPS: r.fps,
		Frames: fit(frames, sh.Width, sh.Height, req.Width, req.Height, req.Frames)}, nil
}

// fit returns n frames of w×h from the pipeline's frames of pw×ph: the nearest frame in time,
// scaled bilinearly when the sizes differ (mock-device mode's MOCK_VIDEO_SCALE shrinks the
// request).
func fit(frames [][]byte, pw, ph, w, h, n int) [][]byte {
	out := make([][]byte, n)
	for i := range n {
		src := frames[min(i*len(frames)/n, len(frames)-1)]
		if pw == w && ph == h {
			out[i] = src
			continue
		}
		from := image.NewNRGBA(image.Rect(0, 0, pw, ph))
		for p, q := 0, 0; p < len(src); p, q = p+3, q+4 {
			from.Pix[q], from.Pix[q+1], from.Pix[q+2], from.Pix[q+3] = src[p], src[p+1], src[p+2], 255
		}
		dst := image.NewNRGBA(image.Rect(0, 0, w, h))
		xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), from, from.Bounds(), xdraw.Src, nil)
		fr := make([]byte, w*h*3)
		for p, q := 0, 0; p < len(fr); p, q = p+3, q+4 {
			fr[p], fr[p+1], fr[p+2] = dst.Pix[q], dst.Pix[q+1], dst.Pix[q+2]
		}
		out[i] = fr
	}
	return out
}

// Close releases the programs and the device.
func (r *PipelineRunner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.closeDevice()
}

func (r *PipelineRunner) closeDevice() error {
	var errs []error
	if r.td != nil {
		errs = append(errs, r.td.Close())
		r.td = nil
	}
	if r.dev != nil {
		errs = append(errs, r.dev.Close())
		r.dev = nil
	}
	r.pipe, r.ipipe = nil, nil
	return errors.Join(errs...)
}
