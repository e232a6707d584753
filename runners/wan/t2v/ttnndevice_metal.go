package t2v

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Declarations finds a program's declaration (runners/programs.Lookup on the server).
type Declarations func(name string) (ttnn.ProgramSpec, bool)

// NewMetalDevice loads the programs of prefix (Prefix480 on a 2x4 mesh, Prefix720 on a 4x8
// Galaxy) for the metal backend (DEVICE_BACKEND=metal in a `ttnn` build) from the .ttnn files
// of weights (MODEL_WEIGHTS_PATH/<program>.ttnn, docs/DEVICE-PROGRAMS.md), checks each against
// its declaration in decl (runners/programs.Lookup; tests pass a shrunk one) and that dev has
// the declared mesh, and that the four fit together (as NewTTNNDevice does). A missing file, a
// mesh other than the declared one or a program that differs from its declaration is a
// configuration error (runners.ErrConfig: one line naming the program and the difference).
//
// Nothing runs here: the first runs (the runner's warm-up clip) are tt-mlir's compile runs, and
// the experts, compiled with tt-mlir's trace pass (enable-trace, scripts/compile-device-programs.sh),
// capture their step's trace on their first run and replay it on every later one, the inputs
// being persistent (retained) tensors rewritten in place. UNVERIFIED ON HARDWARE: CI runs it
// over the fake tt::runtime (scripts/check-metal.sh), whose outputs are not a model's.
func NewMetalDevice(ctx context.Context, dev *ttnn.Device, weights, prefix string, decl Declarations) (_ *TTNNDevice, err error) {
	if weights == "" {
		return nil, runners.Permanent(errors.New("wan2.2 on metal: MODEL_WEIGHTS_PATH is not set (it must hold the .ttnn programs, docs/DEVICE-PROGRAMS.md)"))
	}
	if decl == nil {
		decl = programs.Lookup
	}
	d := &TTNNDevice{dev: dev, progs: map[string]*program{}, names: ProgramNames(prefix)}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	mesh := dev.Info().Mesh
	specs := make([]ttnn.ProgramSpec, len(d.names))
	for i, name := range d.names {
		spec, ok := decl(name)
		if !ok {
			return nil, fmt.Errorf("wan2.2 on metal: program %s is not declared in runners/programs", name)
		}
		path := programs.MetalPath(weights, name)
		if _, err := os.Stat(path); err != nil {
			return nil, runners.Permanent(fmt.Errorf("wan2.2 on metal: MODEL_WEIGHTS_PATH has no %s.ttnn (docs/DEVICE-PROGRAMS.md): %w", name, err))
		}
		if spec.Mesh != mesh {
			return nil, runners.Permanent(fmt.Errorf("wan2.2 on metal: program %s is declared for a %v mesh; this worker's device is %v (DEVICE_MESH_SHAPE, DEVICE_IDS)", name, spec.Mesh, mesh))
		}
		if len(spec.Functions) != 1 {
			return nil, fmt.Errorf("wan2.2 on metal: program %s is declared with %d functions, want 1", name, len(spec.Functions))
		}
		specs[i] = spec
	}
	for i, name := range d.names {
		path := programs.MetalPath(weights, name)
		prog, err := dev.LoadProgram(ctx, path)
		if err != nil {
			if errors.Is(err, ttnn.ErrInvalidArgument) || errors.Is(err, ttnn.ErrNotFound) {
				return nil, runners.Permanent(fmt.Errorf("wan2.2 on metal: program %s: load %s: %w", name, path, err))
			}
			return nil, fmt.Errorf("wan2.2 on metal: program %s: load %s: %w", name, path, simdev.DeviceErr(err))
		}
		if err := specs[i].Check(path, prog.Functions()); err != nil {
			_ = prog.Close()
			return nil, runners.Permanent(err)
		}
		p, err := d.bind(ctx, name, prog, &specs[i].Functions[0])
		if p != nil {
			d.progs[name] = p
		}
		if err != nil {
			return nil, err
		}
	}
	if err := d.checkShapes(); err != nil {
		return nil, runners.Permanent(err)
	}
	return d, nil
}

// ShrunkDeclarations are the declarations of the Wan2.2 T2V programs (decl, e.g.
// runners/programs.Lookup) at a smaller clip — frames of width x height, UMT5 states of
// textDim — and otherwise unchanged: names, meshes, functions, dtypes, layouts, the 512 ids.
// The metal path's tests run clips over the fake tt::runtime with them, which fills outputs
// on the host (the declared 832x480 VAE output is 97M values, copied once per chip).
func ShrunkDeclarations(decl Declarations, frames, height, width, textDim int) Declarations {
	return func(name string) (ttnn.ProgramSpec, bool) {
		spec, ok := decl(name)
		if !ok {
			return spec, false
		}
		lat := []int{1, LatentChannels, (frames-1)/TemporalFactor + 1, height / SpatialFactor, width / SpatialFactor}
		for i := range spec.Functions {
			f := &spec.Functions[i]
			for _, ts := range [][]ttnn.TensorSpec{f.Inputs, f.Outputs} {
				for j := range ts {
					switch s := ts[j].Shape; {
					case len(s) == 5 && s[1] == LatentChannels:
						ts[j].Shape = slices.Clone(lat)
					case len(s) == 5 && s[1] == 3:
						ts[j].Shape = []int{1, 3, frames, height, width}
					case len(s) == 3:
						ts[j].Shape = []int{s[0], s[1], textDim}
					}
				}
			}
		}
		return spec, true
	}
}
