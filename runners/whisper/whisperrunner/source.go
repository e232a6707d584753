package whisperrunner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// source is where the model's device programs come from: the simulator's manifests
// (<name>.ttbsim, written to a scratch directory compiled for the device's mesh), or on the
// metal backend the tt-mlir binaries <MODEL_WEIGHTS_PATH>/<name>.ttnn, each checked against
// its declaration in runners/programs when loaded.
type source struct {
	manifests fs.FS  // simulator
	weights   string // metal, when not ""
	dir       string // simulator: the manifests rewritten for the mesh
}

// simSource are the simulator manifests of programs (nil: ttnn.SimPrograms()).
func simSource(manifests fs.FS) *source {
	if manifests == nil {
		manifests = ttnn.SimPrograms()
	}
	return &source{manifests: manifests}
}

// metalSource are the .ttnn files of the weights directory.
func metalSource(weights string) *source { return &source{weights: weights} }

// metal reports whether the programs are tt-mlir binaries.
func (s *source) metal() bool { return s != nil && s.weights != "" }

// has reports whether the program name is there (on metal: declared, and its file exists).
func (s *source) has(name string) bool {
	if s.metal() {
		if _, ok := programs.Lookup(name); !ok {
			return false
		}
		_, err := os.Stat(programs.MetalPath(s.weights, name))
		return err == nil
	}
	_, err := fs.Stat(s.manifests, name+".ttbsim")
	return err == nil
}

// load loads the program name onto dev. On metal a program that differs from its
// declaration is a runners.Permanent error (one line naming the program, the tensor and the
// difference): the worker fails at once, without a device reset or a retry.
func (s *source) load(ctx context.Context, dev *ttnn.Device, name string) (*ttnn.Program, error) {
	if s.metal() {
		p, err := programs.Load(ctx, dev, name, programs.MetalPath(s.weights, name))
		if errors.Is(err, ttnn.ErrContract) {
			return nil, runners.Permanent(err)
		}
		if err != nil {
			return nil, fmt.Errorf("whisper: %w", err)
		}
		return p, nil
	}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "whisper-programs-")
		if err != nil {
			return nil, fmt.Errorf("whisper: program directory: %w", err)
		}
		s.dir = dir
	}
	return loadProgram(ctx, dev, s.manifests, s.dir, name, dev.Info().Mesh)
}

// close removes the scratch directory.
func (s *source) close() error {
	if s == nil || s.dir == "" {
		return nil
	}
	dir := s.dir
	s.dir = ""
	return os.RemoveAll(dir)
}

// vocab is n_vocab: the last dimension of the decoder step's logits (the manifest's, or on
// metal the declaration's, which the loaded .ttnn is checked against).
func (s *source) vocab() (int, error) {
	if !s.metal() {
		return ProgramVocab(s.manifests)
	}
	spec, ok := programs.Lookup(DecoderProgram)
	if !ok || len(spec.Functions) != 1 || len(spec.Functions[0].Outputs) != 1 {
		return 0, fmt.Errorf("%w: %s is not declared with one function and one output", ErrBadProgram, DecoderProgram)
	}
	sh := spec.Functions[0].Outputs[0].Shape
	return sh[len(sh)-1], nil
}

// MetalFiles checks that weights holds the .ttnn files a metal runner loads at batch size
// maxBatch (the encoder, the decoder step, and the batched step BatchSize chooses), naming
// the first one missing.
func MetalFiles(weights string, maxBatch int) error {
	if weights == "" {
		return fmt.Errorf("whisper on metal: MODEL_WEIGHTS_PATH is not set (it must hold %s.ttnn and %s.ttnn, see docs/DEVICE-PROGRAMS.md)", EncoderProgram, DecoderProgram)
	}
	src := metalSource(weights)
	need := []string{EncoderProgram, DecoderProgram}
	if maxBatch > 1 {
		need = append(need[:1], BatchProgram(src.batchSize(maxBatch)))
	}
	for _, name := range need {
		if _, err := os.Stat(programs.MetalPath(weights, name)); err != nil {
			return fmt.Errorf("whisper on metal: MODEL_WEIGHTS_PATH has no %s.ttnn (docs/DEVICE-PROGRAMS.md): %w", name, err)
		}
	}
	return nil
}

// inputQueue is the command queue the model writes its inputs on: 1 when the device has two
// and the backend orders queues with events (queue 0 waits for the writes through an event,
// as tt-metal's Whisper demo overlaps its input copies), else 0. The metal backend has no
// events (tt-mlir's runtime orders its own work), so its inputs go through queue 0.
func inputQueue(ctx context.Context, dev *ttnn.Device) (int, error) {
	if dev.Info().CommandQueues < 2 {
		return 0, nil
	}
	ev, err := dev.RecordEvent(ctx, 1)
	switch {
	case errors.Is(err, ttnn.ErrUnsupported):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("whisper: record an event on command queue 1: %w", err)
	}
	if err := dev.WaitEvent(ctx, 0, ev); err != nil {
		return 0, fmt.Errorf("whisper: wait for command queue 1: %w", err)
	}
	return 1, nil
}
