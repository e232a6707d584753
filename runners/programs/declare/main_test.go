package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

func TestCheckDir(t *testing.T) {
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v; skipping", err)
	}
	write := func(name string, mod func(*ttnn.ProgramSpec)) string {
		spec, ok := programs.Lookup(name) // a copy: mod may change it
		require.True(t, ok)
		if mod != nil {
			mod(&spec)
		}
		dir := t.TempDir()
		require.NoError(t, ttnnfile.Write(context.Background(), ttnnfile.SDKDir(), programs.MetalPath(dir, name), ttnnfile.FromSpec(spec)))
		return dir
	}
	good := write("whisper-encoder", nil)
	require.Equal(t, 0, checkDir(good, nil))
	require.Equal(t, 1, checkDir(good, []string{"whisper-encoder", "resnet50"}), "a named program that is missing")
	require.Equal(t, 1, checkDir(t.TempDir(), nil), "nothing to check")

	spec, _ := programs.Lookup("whisper-encoder")
	tests := []struct {
		name string
		mod  func(*ttnn.ProgramSpec)
		want string
	}{
		{"mesh", func(s *ttnn.ProgramSpec) { s.Mesh = ttnn.MeshShape{Rows: 1, Cols: 2} }, "function encode: compiled for a 1x2 mesh, 1x1 declared"},
		{"layout", func(s *ttnn.ProgramSpec) { s.Functions[0].Outputs[0].Layout = ttnn.RowMajor }, "output 0 (encoder_hidden_states): row-major in DRAM in the file, tile in DRAM declared"},
		{"dtype", func(s *ttnn.ProgramSpec) { s.Functions[0].Outputs[0].DType = ttnn.F32 }, "output 0 (encoder_hidden_states): dtype f32 in the file, bf16 declared"},
		{"function", func(s *ttnn.ProgramSpec) { s.Functions[0].Name = "forward" }, "function encode is missing (the file has forward)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := write("whisper-encoder", tc.mod)
			err := checkFile(spec, programs.MetalPath(dir, "whisper-encoder"))
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n")
			require.Equal(t, 1, checkDir(dir, nil))
		})
	}
}

// docs/DEVICE-PROGRAMS.md carries the contract's table as `declare` prints it.
func TestDocsTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/DEVICE-PROGRAMS.md")
	require.NoError(t, err)
	require.Contains(t, string(doc), table(), "regenerate the table with: go run ./runners/programs/declare")
}

// The Wan2.2 T2V set as scripts/compile-device-programs.sh checks it after compiling: the four
// wan22-t2v-* files pass; an expert of the Galaxy set compiled for the T3K's mesh, or a VAE of
// another frame count, is named.
func TestCheckDirWan(t *testing.T) {
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v; skipping", err)
	}
	names := []string{"wan22-t2v-text-encoder", "wan22-t2v-transformer", "wan22-t2v-transformer-2", "wan22-t2v-vae"}
	dir := t.TempDir()
	require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, names, programs.Lookup, ttnnfile.Fixture{}))
	require.Equal(t, 0, checkDir(dir, names))
	for _, tc := range []struct {
		name string
		mod  func(*ttnn.ProgramSpec)
		want string
	}{
		{"wan22-t2v-720p-transformer", func(s *ttnn.ProgramSpec) { s.Mesh = ttnn.MeshShape{Rows: 2, Cols: 4} }, "function forward: compiled for a 2x4 mesh, 4x8 declared"},
		{"wan22-t2v-vae", func(s *ttnn.ProgramSpec) { s.Functions[0].Outputs[0].Shape[2] = 80 }, "output 0 (video): shape [1,3,80,480,832] in the file, [1,3,81,480,832] declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, []string{tc.name}, programs.Lookup,
				ttnnfile.Fixture{Mod: func(_ string, s *ttnn.ProgramSpec) { tc.mod(s) }}))
			spec, _ := programs.Lookup(tc.name)
			err := checkFile(spec, programs.MetalPath(dir, tc.name))
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, 1, checkDir(dir, []string{tc.name}))
		})
	}
}
