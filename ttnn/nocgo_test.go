//go:build !cgo

package ttnn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoCgoTwinFailsClearly(t *testing.T) {
	_, err := Open(context.Background(), Options{})
	require.ErrorIs(t, err, ErrUnsupported)
	require.EqualError(t, err, "ttnn: open: unsupported: built without device support (CGO_ENABLED=0)")
	require.ErrorIs(t, Init("sim"), ErrUnsupported)
	_, err = VisibleChips()
	require.ErrorIs(t, err, ErrUnsupported)
	require.Empty(t, Backends())
	_, err = OpenParent(context.Background(), Options{})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = (&Device{}).OpenSubmesh(context.Background(), Options{})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = (&Device{}).Submesh(context.Background(), MeshShape{Rows: 1, Cols: 1}, MeshCoord{})
	require.ErrorIs(t, err, ErrUnsupported)
}
