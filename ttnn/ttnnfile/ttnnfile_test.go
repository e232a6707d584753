package ttnnfile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestWriteBuildsATTNNFlatbuffer(t *testing.T) {
	sdk := SDKDir()
	if err := Available(sdk); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v; skipping", err)
	}
	progs := []Program{{FunctionSpec: ttnn.FunctionSpec{Name: "forward",
		Inputs:  []ttnn.TensorSpec{{TensorDesc: ttnn.TensorDesc{Name: "x", DType: ttnn.BF16, Shape: []int{1, 32}}, Layout: ttnn.Tile}},
		Outputs: []ttnn.TensorSpec{{TensorDesc: ttnn.TensorDesc{Name: "y", DType: ttnn.F32, Shape: []int{1, 32}}}}},
		Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, Traced: true, Ops: 3}}
	path := filepath.Join(t.TempDir(), "p.ttnn")
	require.NoError(t, Write(context.Background(), sdk, path, progs))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "TTNN", string(b[8:12]), "size prefix, root offset, then the file identifier")
	require.Contains(t, string(b), "forward")

	_, err = JSON([]Program{{FunctionSpec: ttnn.FunctionSpec{Name: "f", Inputs: []ttnn.TensorSpec{{TensorDesc: ttnn.TensorDesc{DType: ttnn.DType(99)}}}}}})
	require.ErrorContains(t, err, "no TTNN data type")
}

func TestReadRoundTrip(t *testing.T) {
	sdk := SDKDir()
	if err := Available(sdk); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v; skipping", err)
	}
	ts := func(name string, dt ttnn.DType, l ttnn.Layout, p ttnn.Placement, shape ...int) ttnn.TensorSpec {
		return ttnn.TensorSpec{TensorDesc: ttnn.TensorDesc{DType: dt, Shape: shape}, Layout: l, Placement: p}
	}
	want := []Program{
		{FunctionSpec: ttnn.FunctionSpec{Name: "encode",
			Inputs:  []ttnn.TensorSpec{ts("ids", ttnn.I32, ttnn.RowMajor, ttnn.DRAM, 2, 77), ts("x", ttnn.BF16, ttnn.Tile, ttnn.L1, 1)},
			Outputs: []ttnn.TensorSpec{ts("h", ttnn.BF16, ttnn.Tile, ttnn.DRAM, 2, 77, 768), ts("y", ttnn.U8, ttnn.RowMajor, ttnn.Host, 3)}},
			Mesh: ttnn.MeshShape{Rows: 2, Cols: 4}},
		{FunctionSpec: ttnn.FunctionSpec{Name: "step",
			Inputs:  []ttnn.TensorSpec{ts("a", ttnn.U32, ttnn.RowMajor, ttnn.DRAM, 1)},
			Outputs: []ttnn.TensorSpec{ts("b", ttnn.F32, ttnn.RowMajor, ttnn.DRAM, 1, 1, 51866)}},
			Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, Traced: true, Ops: 2},
	}
	path := filepath.Join(t.TempDir(), "p.ttnn")
	require.NoError(t, Write(context.Background(), sdk, path, want))
	got, err := Read(path)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range want {
		w := want[i]
		for _, s := range [][]ttnn.TensorSpec{w.Inputs, w.Outputs} {
			for j := range s {
				s[j].Name = "" // .ttnn tensors are positional
			}
		}
		require.Equal(t, w.Name, got[i].Name)
		require.Equal(t, w.Mesh, got[i].Mesh)
		require.Equal(t, w.Inputs, got[i].Inputs)
		require.Equal(t, w.Outputs, got[i].Outputs)
	}

	// Truncations and garbage are errors, never panics.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for n := 0; n < len(b); n += 7 {
		_, _ = parse(b[:n])
		c := append([]byte(nil), b...)
		c[n] ^= 0xA5
		_, _ = parse(c)
	}
	_, err = parse([]byte("not a flatbuffer at all"))
	require.Error(t, err)
}

func TestWriteDeclared(t *testing.T) {
	sdk := SDKDir()
	if err := Available(sdk); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v; skipping", err)
	}
	decl := map[string]ttnn.ProgramSpec{}
	for _, name := range []string{"a", "b"} {
		decl[name] = ttnn.ProgramSpec{Name: name, Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, Functions: []ttnn.FunctionSpec{{Name: "forward",
			Inputs:  []ttnn.TensorSpec{{TensorDesc: ttnn.TensorDesc{DType: ttnn.BF16, Shape: []int{2, 4}}, Layout: ttnn.Tile}},
			Outputs: []ttnn.TensorSpec{{TensorDesc: ttnn.TensorDesc{DType: ttnn.F32, Shape: []int{2}}}}}}}
	}
	lookup := func(name string) (ttnn.ProgramSpec, bool) {
		p, ok := decl[name]
		if ok { // a copy, as runners/programs.Lookup gives
			p.Functions = []ttnn.FunctionSpec{p.Functions[0]}
			p.Functions[0].Inputs = []ttnn.TensorSpec{p.Functions[0].Inputs[0]}
			p.Functions[0].Inputs[0].Shape = []int{2, 4}
		}
		return p, ok
	}
	dir := t.TempDir()
	var traced []string
	require.NoError(t, WriteDeclared(context.Background(), sdk, dir, []string{"a", "b"}, lookup, Fixture{
		Traced: func(name string) bool { traced = append(traced, name); return name == "a" },
		Mod: func(name string, s *ttnn.ProgramSpec) {
			if name == "b" {
				s.Functions[0].Inputs[0].Shape[1] = 8
			}
		}}))
	require.Equal(t, []string{"a", "b"}, traced)
	for name, shape := range map[string][]int{"a": {2, 4}, "b": {2, 8}} {
		got, err := Read(filepath.Join(dir, name+".ttnn"))
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, shape, got[0].Inputs[0].Shape, name)
	}
	require.Equal(t, []int{2, 4}, decl["b"].Functions[0].Inputs[0].Shape, "the declaration itself is not changed")
	require.ErrorContains(t, WriteDeclared(context.Background(), sdk, dir, []string{"c"}, lookup, Fixture{}), "program c is not declared")
}
