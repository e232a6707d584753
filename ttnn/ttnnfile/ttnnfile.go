// Package ttnnfile writes .ttnn program files — tt-mlir's TTNN flatbuffer (file identifier
// "TTNN", size-prefixed, schema include/ttmlir/Target/TTNN/binary.fbs) — from program
// declarations, for tests and tools. It renders the programs as the schema's JSON and has
// `flatc -b --size-prefixed` (Debian flatbuffers-compiler) compile it with the pinned schemas
// in ../shared/tt-mlir-sdk. The files carry each program's signature (name, inputs, outputs
// with shape, data type, layout, memory; mesh shape) and no real operations: they are what
// the metal backend's loader and the fake tt::runtime (ttnn/fakert) read, not device code.
package ttnnfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Program is one program of a .ttnn file.
type Program struct {
	ttnn.FunctionSpec
	Mesh ttnn.MeshShape
	// Traced adds a CaptureOrExecuteTraceOp, so the runtime captures a trace on the program's
	// first run and replays it later (what tt-mlir's trace pass emits).
	Traced bool
	// Ops is the number of operations recorded (at least 1; the fake charges trace bytes per op).
	Ops int
}

// FromSpec returns the programs of one declared program file.
func FromSpec(spec ttnn.ProgramSpec) []Program {
	out := make([]Program, len(spec.Functions))
	for i, f := range spec.Functions {
		out[i] = Program{FunctionSpec: f, Mesh: spec.Mesh}
	}
	return out
}

// SDKDir is ../shared/tt-mlir-sdk beside the repository (found from this file's path).
func SDKDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "tt-mlir-sdk")
}

// ErrNoTools reports that flatc or the SDK's schemas are missing.
var ErrNoTools = errors.New("ttnnfile: flatc or the tt-mlir SDK schemas are missing")

var dtypeNames = map[ttnn.DType]string{ttnn.BF16: "BFloat16", ttnn.F32: "Float32", ttnn.U32: "UInt32",
	ttnn.I32: "Int32", ttnn.U16: "UInt16", ttnn.U8: "UInt8"}

type jsonObj = map[string]any

func tensorRef(id int, s ttnn.TensorSpec) (jsonObj, error) {
	dt, ok := dtypeNames[s.DType]
	if !ok {
		return nil, fmt.Errorf("ttnnfile: tensor %q: dtype %v has no TTNN data type", s.Name, s.DType)
	}
	md := jsonObj{"data_type": dt, "storage_type": "Device"}
	if s.Layout == ttnn.Tile {
		md["tile_shape"] = jsonObj{"y": 32, "x": 32}
	} else {
		md["tile_shape"] = jsonObj{"y": 1, "x": 1}
	}
	switch s.Placement {
	case ttnn.Host:
		md["storage_type"] = "Host"
	case ttnn.L1:
		md["memory_config"] = jsonObj{"tensor_memory_layout": "Interleaved", "buffer_type": "L1"}
	default:
		md["memory_config"] = jsonObj{"tensor_memory_layout": "Interleaved", "buffer_type": "DRAM"}
	}
	shape := s.Shape
	if shape == nil {
		shape = []int{}
	}
	return jsonObj{"global_id": id, "desc": jsonObj{"shape": shape, "layout": jsonObj{"memory_desc": md}}}, nil
}

// JSON renders the programs as a TTNNBinary in the schema's JSON form.
func JSON(progs []Program) ([]byte, error) {
	var ps []jsonObj
	id := 1
	for _, p := range progs {
		var ins, outs []jsonObj
		for _, s := range p.Inputs {
			r, err := tensorRef(id, s)
			if err != nil {
				return nil, err
			}
			ins, id = append(ins, r), id+1
		}
		for _, s := range p.Outputs {
			r, err := tensorRef(id, s)
			if err != nil {
				return nil, err
			}
			outs, id = append(outs, r), id+1
		}
		var ops []jsonObj
		for range max(p.Ops, 1) - 1 {
			ops = append(ops, jsonObj{"type_type": "DeallocateOp", "type": jsonObj{}})
		}
		if p.Traced {
			ops = append(ops, jsonObj{"type_type": "CaptureOrExecuteTraceOp", "type": jsonObj{}})
		} else {
			ops = append(ops, jsonObj{"type_type": "DeallocateOp", "type": jsonObj{}})
		}
		ps = append(ps, jsonObj{"name": p.Name, "inputs": ins, "outputs": outs, "operations": ops,
			"mesh_shape": jsonObj{"y": p.Mesh.Rows, "x": p.Mesh.Cols}})
	}
	return json.MarshalIndent(jsonObj{
		"version": jsonObj{"major": 0, "minor": 0, "patch": 0}, "schema_hash": "ttnnfile",
		"ttmlir_git_hash": "19c86fca45ae7c3d8f886c0401d8b40a40d2f294", "programs": ps,
	}, "", " ")
}

// Available reports whether Write can run: flatc in PATH and the SDK's schemas present
// (wrapping ErrNoTools otherwise).
func Available(sdk string) error {
	if _, err := exec.LookPath("flatc"); err != nil {
		return fmt.Errorf("%w: flatc not in PATH (Debian flatbuffers-compiler; scripts/check-metal.sh installs it)", ErrNoTools)
	}
	if _, err := os.Stat(filepath.Join(sdk, "include", "ttmlir", "Target", "TTNN", "binary.fbs")); err != nil {
		return fmt.Errorf("%w: %v", ErrNoTools, err)
	}
	return nil
}

// Write writes the programs to path (a .ttnn file) with flatc and the schemas under sdk.
func Write(ctx context.Context, sdk, path string, progs []Program) error {
	if err := Available(sdk); err != nil {
		return err
	}
	js, err := JSON(progs)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ttnnfile")
	if err != nil {
		return fmt.Errorf("ttnnfile: %w", err)
	}
	defer os.RemoveAll(dir)
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if err := os.WriteFile(filepath.Join(dir, stem+".json"), js, 0o644); err != nil {
		return fmt.Errorf("ttnnfile: %w", err)
	}
	inc := filepath.Join(sdk, "include")
	cmd := exec.CommandContext(ctx, "flatc", "-b", "--size-prefixed", "-I", inc, "-o", dir,
		filepath.Join(inc, "ttmlir", "Target", "TTNN", "binary.fbs"), filepath.Join(dir, stem+".json"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ttnnfile: flatc: %w: %s", err, out.String())
	}
	bin, err := os.ReadFile(filepath.Join(dir, stem+".ttnn"))
	if err != nil {
		return fmt.Errorf("ttnnfile: flatc wrote no binary: %w", err)
	}
	if len(bin) < 8 || string(bin[8:12]) != "TTNN" {
		return fmt.Errorf("ttnnfile: flatc output is not a size-prefixed TTNN flatbuffer")
	}
	return os.WriteFile(path, bin, 0o644)
}

// SimManifest renders a declared program as a simulator manifest (ttnn/README.md "Manifest
// format"): the same name, mesh, functions and tensors, with latencyMs and traceBytes for every
// function.
func SimManifest(spec ttnn.ProgramSpec, latencyMs float64, traceBytes int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "ttb-sim-program 1\nname %s\n", spec.Name)
	if spec.Mesh.Chips() > 0 {
		fmt.Fprintf(&b, "mesh %d %d\n", spec.Mesh.Rows, spec.Mesh.Cols)
	}
	for _, f := range spec.Functions {
		fmt.Fprintf(&b, "func %s\nlatency_ms %g\ntrace_bytes %d\n", f.Name, latencyMs, traceBytes)
		for _, io := range []struct {
			kind  string
			specs []ttnn.TensorSpec
		}{{"input", f.Inputs}, {"output", f.Outputs}} {
			for i, s := range io.specs {
				if s.DType.Size() == 0 {
					return "", fmt.Errorf("ttnnfile: %s.%s %s %d: bad dtype %v", spec.Name, f.Name, io.kind, i, s.DType)
				}
				name := s.Name
				if name == "" {
					name = fmt.Sprintf("%s%d", io.kind[:1], i)
				}
				fmt.Fprintf(&b, "%s %s %v", io.kind, name, s.DType)
				for _, d := range s.Shape {
					fmt.Fprintf(&b, " %d", d)
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String(), nil
}

// Fixture says how WriteDeclared writes a set of programs.
type Fixture struct {
	// Traced says which programs capture a trace on their first run (what tt-mlir's trace
	// pass makes of a traced step); nil: none.
	Traced func(name string) bool
	// Mod, when not nil, changes a program's declaration before it is written: a file that
	// differs from its declaration.
	Mod func(name string, spec *ttnn.ProgramSpec)
}

// WriteDeclared writes <dir>/<name>.ttnn (the metal backend's MODEL_WEIGHTS_PATH layout) for
// each named program from its declaration (lookup: runners/programs.Lookup, which returns a
// copy), each function with 4 operations, changed and traced as f says. For tests and fixtures.
func WriteDeclared(ctx context.Context, sdk, dir string, names []string, lookup func(string) (ttnn.ProgramSpec, bool), f Fixture) error {
	for _, name := range names {
		spec, ok := lookup(name)
		if !ok {
			return fmt.Errorf("ttnnfile: program %s is not declared", name)
		}
		if f.Mod != nil {
			f.Mod(name, &spec)
		}
		progs := FromSpec(spec)
		for i := range progs {
			progs[i].Ops, progs[i].Traced = 4, f.Traced != nil && f.Traced(name)
		}
		if err := Write(ctx, sdk, filepath.Join(dir, name+".ttnn"), progs); err != nil {
			return err
		}
	}
	return nil
}
