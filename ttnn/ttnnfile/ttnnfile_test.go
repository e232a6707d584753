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
