//go:build cgo

package programs_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

func TestMain(m *testing.M) {
	if err := ttnn.Init("sim"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// overlay reads a file from the first of its file systems that has it.
type overlay []fs.FS

func (o overlay) Open(name string) (fs.File, error) {
	var err error
	for _, f := range o {
		var file fs.File
		if file, err = f.Open(name); err == nil {
			return file, nil
		}
	}
	return nil, err
}

// Every simulator manifest the runners ship is its program's declaration, and every
// declaration has a manifest: loaded by the simulator and checked with Check.
func TestSimManifestsMatchTheDeclarations(t *testing.T) {
	d, err := ttnn.Open(context.Background(), ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}})
	require.NoError(t, err)
	defer d.Close()
	manifests := overlay{diffusionpipeline.Programs(), t2v.Programs()}
	dir := t.TempDir()
	seen := map[string]bool{}
	for _, spec := range programs.All() {
		src, err := fs.ReadFile(manifests, spec.Name+".ttbsim")
		require.NoError(t, err, "declared program %s has no simulator manifest", spec.Name)
		require.Contains(t, string(src), "\nname "+spec.Name+"\n")
		path := filepath.Join(dir, spec.Name+".ttbsim")
		require.NoError(t, os.WriteFile(path, src, 0o644))
		p, err := programs.Load(context.Background(), d, spec.Name, path)
		require.NoError(t, err)
		require.NoError(t, p.Close())
		seen[spec.Name] = true
		require.Positive(t, spec.Batch, spec.Name)
		if spec.Batch > 1 {
			require.Equal(t, spec.Batch, spec.Functions[0].Inputs[0].Shape[0], "%s: batch is the leading dimension", spec.Name)
		}
	}
	for _, root := range []fs.FS{ttnn.SimPrograms(), diffusionpipeline.Programs(), t2v.Programs()} {
		ents, err := fs.ReadDir(root, ".")
		require.NoError(t, err)
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".ttbsim"); ok {
				require.True(t, seen[name], "manifest %s has no declaration in runners/programs", e.Name())
			}
		}
	}
}

// A manifest that differs from its declaration is refused with one line naming the program,
// the tensor and the difference.
func TestCheckNamesTheDifference(t *testing.T) {
	spec, ok := programs.Lookup("resnet50")
	require.True(t, ok)
	bad := spec
	bad.Functions = []ttnn.FunctionSpec{spec.Functions[0]}
	bad.Functions[0].Inputs = []ttnn.TensorSpec{spec.Functions[0].Inputs[0]}
	bad.Functions[0].Inputs[0].Shape = []int{8, 3, 224, 224}
	m, err := ttnnfile.SimManifest(bad, 1, 1000)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "resnet50.ttbsim")
	require.NoError(t, os.WriteFile(path, []byte(m), 0o644))
	d, err := ttnn.Open(context.Background(), ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}})
	require.NoError(t, err)
	defer d.Close()
	_, err = programs.Load(context.Background(), d, "resnet50", path)
	require.ErrorIs(t, err, ttnn.ErrContract)
	require.EqualError(t, err, "program does not match its declaration: program resnet50 ("+path+
		"): function forward: input 0 (pixel_values): shape [8,3,224,224] in the file, [16,3,224,224] declared")
	require.NotContains(t, err.Error(), "\n")
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Zero(t, c.Programs, "the refused program is freed")
}
