package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// progSet is what TTNNDevice (SDXL) and TTNNSD3Device (SD3.5) share: the programs loaded from
// simulator manifests (written to a scratch directory) or from the metal backend's .ttnn files,
// the denoiser's captured trace and its outputs, the VAE, the call counts, and the lock that
// serialises the device's methods.
type progSet struct {
	mu  sync.Mutex
	dev *ttnn.Device
	dir string // the simulator manifests' scratch directory ("" on metal)
	// metal is the metal backend's .ttnn directory (MODEL_WEIGHTS_PATH) when the programs come
	// from there: each is checked against its declaration (runners/programs) when loaded, and
	// the denoiser's trace is the one compiled into its program (captured by the runtime on the
	// first run, replayed by every later run), as the backend has no explicit trace calls.
	metal     string
	progs     []*program
	denoiser  *program // the traced program
	vae       *program
	latent    int // values of one latent: the VAE's input
	trace     *ttnn.Trace
	traceOuts []*ttnn.Tensor
	stats     Stats
}

// load loads the named programs, in order, into s.progs: from set's simulator manifests
// (written to a scratch directory named after prefix), or on metal (s.metal set) from
// <s.metal>/<name>.ttnn, each checked against its declaration.
func (s *progSet) load(ctx context.Context, set fs.FS, prefix string, names ...string) error {
	if s.metal != "" {
		return s.loadMetal(ctx, names)
	}
	var err error
	if s.dir, err = os.MkdirTemp("", prefix); err != nil {
		return fmt.Errorf("pipeline: program directory: %w", err)
	}
	for _, name := range names {
		p, err := loadProgram(ctx, s.dev, s.dir, set, name)
		if p != nil {
			s.progs = append(s.progs, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// compileAndCapture runs every program once (the first run compiles a program and must
// precede a trace capture) and captures one run of s.denoiser in a trace. On metal the compile
// run is all: a traced program captures its own trace on that run.
func (s *progSet) compileAndCapture(ctx context.Context) error {
	for _, p := range s.progs {
		outs, err := p.prog.Run(ctx, 0, p.fn.Name, p.inputs...)
		freeAll(outs)
		if err != nil {
			return fmt.Errorf("pipeline: compile run of %s: %w", p.name, simdev.DeviceErr(err))
		}
	}
	if s.metal != "" { // the denoiser's compile run captured the trace compiled into it
		s.stats.TraceCaptures++
		return nil
	}
	tr, outs, err := simdev.Capture(ctx, s.dev, func(ctx context.Context) ([]*ttnn.Tensor, error) {
		return s.denoiser.prog.Run(ctx, 0, s.denoiser.fn.Name, s.denoiser.inputs...)
	})
	s.trace, s.traceOuts = tr, outs
	if err != nil {
		return fmt.Errorf("pipeline: capture %s trace: %w", s.denoiser.name, simdev.DeviceErr(err))
	}
	s.stats.TraceCaptures++
	return nil
}

// step writes the timestep t (the other inputs are written already), replays the denoiser's
// trace and reads its output out, batch latents. The caller holds s.mu.
func (s *progSet) step(ctx context.Context, t float32, out string, batch int) ([]float32, error) {
	tt, _, err := s.denoiser.input("timestep")
	if err != nil {
		return nil, err
	}
	ts := make([]byte, 4)
	putF32(ts, []float32{t})
	if err := tt.Write(ctx, 0, ts); err != nil {
		return nil, fmt.Errorf("pipeline: write timestep: %w", simdev.DeviceErr(err))
	}
	k, desc, err := s.denoiser.output(out)
	if err != nil {
		return nil, err
	}
	outs := s.traceOuts
	if s.metal != "" { // the program replays the trace compiled into it
		outs, err = s.denoiser.prog.Run(ctx, 0, s.denoiser.fn.Name, s.denoiser.inputs...)
		defer freeAll(outs)
		if err != nil {
			return nil, fmt.Errorf("pipeline: run %s: %w", s.denoiser.name, simdev.DeviceErr(err))
		}
		if k >= len(outs) {
			return nil, fmt.Errorf("pipeline: %s output %q missing", s.denoiser.name, out)
		}
	} else if err := s.trace.Replay(ctx, true); err != nil {
		return nil, fmt.Errorf("pipeline: replay %s trace: %w", s.denoiser.name, simdev.DeviceErr(err))
	}
	s.stats.TraceReplays++
	v, err := readBF16(ctx, outs[k], desc)
	if err != nil {
		return nil, fmt.Errorf("pipeline: read %s output %s: %w", s.denoiser.name, out, simdev.DeviceErr(err))
	}
	return v[:batch*s.latent], nil
}

// Stats returns the execution counts so far (TraceCaptures and TraceReplays count the
// denoiser's trace).
func (s *progSet) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// VAE decodes one latent to an image (implements Device and SD3Device).
func (s *progSet) VAE(ctx context.Context, lat []float32) ([]float32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(lat) != s.latent {
		return nil, fmt.Errorf("pipeline: VAE input has %d values, want %d", len(lat), s.latent)
	}
	buf := make([]byte, 2*len(lat))
	putBF16(buf, lat)
	out, err := runRead(ctx, s.vae, buf, "image")
	if err != nil {
		return nil, err
	}
	s.stats.VAEDecodes++
	return out[0], nil
}

// Close releases the trace, tensors, programs and manifests (not the ttnn device). Errors
// of a lost device are not repeated: the call that lost it reported them.
func (s *progSet) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.trace != nil {
		errs = append(errs, s.trace.Release())
		s.trace = nil
	}
	errs = append(errs, freeAllErr(s.traceOuts))
	s.traceOuts = nil
	for _, p := range s.progs {
		errs = append(errs, freeAllErr(p.inputs), p.prog.Close())
	}
	s.progs = nil
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	err := errors.Join(errs...)
	if err == nil || errors.Is(err, ttnn.ErrDeviceLost) || errors.Is(err, ttnn.ErrTimeout) {
		return nil
	}
	return fmt.Errorf("pipeline: close: %w", err)
}
