package voices

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sbinet/npyio/npy"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func writeNPY(t *testing.T, dir string, rows, cols int) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, EmbeddingsFile))
	require.NoError(t, err)
	defer f.Close()
	data := make([]float64, rows*cols)
	for i := range data {
		data[i] = float64(i%97) / 100
	}
	// npy writes a Dense as '<f8'; write float32 rows for the real layout.
	if cols == 512 {
		flat := make([]float32, rows*cols)
		for i := range flat {
			flat[i] = float32(data[i])
		}
		require.NoError(t, npy.Write(f, reshape(flat, rows, cols)))
		return
	}
	require.NoError(t, npy.Write(f, mat.NewDense(rows, cols, data)))
}

// reshape gives npy a 2-D float32 array (it writes a [][N]float32 as shape (rows, N)).
func reshape(flat []float32, rows, cols int) [][512]float32 {
	out := make([][512]float32, rows)
	for r := range rows {
		copy(out[r][:], flat[r*cols:(r+1)*cols])
	}
	return out
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeNPY(t, dir, 3, 512)
	tab, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"speaker_0000", "speaker_0001", "speaker_0002"}, tab.IDs())
	v, err := tab.Embedding("speaker_0001")
	require.NoError(t, err)
	require.Len(t, v, 512)
	require.InDelta(t, float64(512%97)/100, v[0], 1e-6)
	require.Equal(t, "speaker_0000", tab.DefaultID(), "without speaker_7306 the first speaker")
	_, err = tab.Voice("alloy")
	require.ErrorIs(t, err, ErrUnknownSpeaker, "alloy maps to speaker_7306, which this table lacks")

	require.NoError(t, os.WriteFile(filepath.Join(dir, IDsFile), []byte("a\nb\nspeaker_7306\n"), 0o644))
	tab, err = Load(dir)
	require.NoError(t, err)
	require.Equal(t, "speaker_7306", tab.DefaultID())
	id, err := tab.Voice("Alloy")
	require.NoError(t, err)
	require.Equal(t, "speaker_7306", id)

	require.NoError(t, os.WriteFile(filepath.Join(dir, IDsFile), []byte("a\nb\n"), 0o644))
	_, err = Load(dir)
	require.ErrorContains(t, err, "names 2 speakers")

	bad := t.TempDir()
	writeNPY(t, bad, 2, 511)
	_, err = Load(bad)
	require.ErrorContains(t, err, "(N, 512)")
	_, err = Load(t.TempDir())
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestBuiltin(t *testing.T) {
	tab := Builtin()
	require.Equal(t, Default, tab.DefaultID())
	for name, id := range OpenAI {
		got, err := tab.Voice(name)
		require.NoError(t, err, name)
		require.Equal(t, id, got)
	}
	a, _ := tab.Embedding("speaker_0100")
	b, _ := Builtin().Embedding("speaker_0100")
	require.Equal(t, a, b, "deterministic")
	c, _ := tab.Embedding(Default)
	require.NotEqual(t, a, c)
}
