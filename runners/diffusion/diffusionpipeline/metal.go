package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// NewMetalDevice loads the SDXL programs of variant v for the metal backend (DEVICE_BACKEND=metal
// in a `ttnn` build) from the .ttnn files of weights (MODEL_WEIGHTS_PATH/<program>.ttnn), checks
// each against its declaration in runners/programs, runs each once (tt-mlir's compile run; the
// UNet captures the trace compiled into it there) and leaves dev the caller's. A missing file
// or a program that differs from its declaration is a configuration error
// (runners.ErrConfig: one line naming the program, the tensor and the difference). The LoRA
// fuse program is not loaded: the metal backend has no LoRA weight update (FuseLoRA returns
// ErrNoLoRAProgram). UNVERIFIED ON HARDWARE: CI runs it over the fake tt::runtime, whose
// outputs are not a model's.
func NewMetalDevice(ctx context.Context, dev *ttnn.Device, weights string, v Variant) (*TTNNDevice, error) {
	if weights == "" {
		return nil, runners.Permanent(errors.New("pipeline on metal: MODEL_WEIGHTS_PATH is not set (it must hold the .ttnn programs, docs/DEVICE-PROGRAMS.md)"))
	}
	return newTTNNDevice(ctx, dev, nil, weights, v)
}

// NewMetalSD3Device is NewMetalDevice for the SD3.5 programs (declared for a 2x4 mesh: dev
// must be one).
func NewMetalSD3Device(ctx context.Context, dev *ttnn.Device, weights string) (*TTNNSD3Device, error) {
	if weights == "" {
		return nil, runners.Permanent(errors.New("pipeline on metal: MODEL_WEIGHTS_PATH is not set (it must hold the .ttnn programs, docs/DEVICE-PROGRAMS.md)"))
	}
	return newTTNNSD3Device(ctx, dev, nil, weights)
}

// loadMetal loads <s.metal>/<name>.ttnn for each name, checked against its declaration, after
// checking that every file is there and that the device has the declared mesh.
func (s *progSet) loadMetal(ctx context.Context, names []string) error {
	mesh := s.dev.Info().Mesh
	for _, name := range names {
		spec, ok := programs.Lookup(name)
		if !ok {
			return fmt.Errorf("pipeline: program %s is not declared in runners/programs", name)
		}
		path := programs.MetalPath(s.metal, name)
		if _, err := os.Stat(path); err != nil {
			return runners.Permanent(fmt.Errorf("pipeline on metal: MODEL_WEIGHTS_PATH has no %s.ttnn (docs/DEVICE-PROGRAMS.md): %w", name, err))
		}
		if spec.Mesh != mesh {
			return runners.Permanent(fmt.Errorf("pipeline on metal: program %s is declared for a %v mesh; this worker's device is %v (DEVICE_MESH_SHAPE, DEVICE_IDS)", name, spec.Mesh, mesh))
		}
	}
	for _, name := range names {
		prog, err := programs.Load(ctx, s.dev, name, programs.MetalPath(s.metal, name))
		if err != nil {
			if errors.Is(err, ttnn.ErrContract) {
				return runners.Permanent(err)
			}
			return simdev.DeviceErr(err)
		}
		// .ttnn tensors are positional: the declaration, which the file matched, names them.
		spec, _ := programs.Lookup(name)
		p, err := bindProgram(ctx, s.dev, name, prog, &spec.Functions[0])
		if p != nil {
			s.progs = append(s.progs, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
