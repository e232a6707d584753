//go:build cgo

package ttnn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzManifest feeds arbitrary bytes to the sim's C manifest parser. Seeds: f.Add below and
// testdata/fuzz/FuzzManifest.
func FuzzManifest(f *testing.F) {
	for _, name := range []string{"testdata/tiny.ttbsim", "programs/sdxl-unet.ttbsim", "programs/whisper-decoder-step.ttbsim"} {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("ttb-sim-program 1\nname x\nfunc f\noutput y u8 4294967295 4294967295\n"))
	d, err := Open(bg, Options{})
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, d.Close()) })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "m.ttbsim")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		p, err := d.LoadProgram(bg, path)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidArgument)
			return
		}
		fns := p.Functions()
		require.NotEmpty(t, fns)
		for _, fn := range fns {
			require.NotEmpty(t, fn.Outputs)
			for _, d := range append(fn.Inputs, fn.Outputs...) {
				require.NotZero(t, d.DType.Size())
				require.NotEmpty(t, d.Shape)
			}
		}
		require.NoError(t, p.Close())
	})
}

// FuzzVisibleDevices checks the TT_VISIBLE_DEVICES parser's invariants.
func FuzzVisibleDevices(f *testing.F) {
	for _, s := range []string{"", "0", "0,1", " 4 ,2", "1,1", "x", "0000:c", "99999999999999999999", "3,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseVisibleDevices(s, true, 5)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidArgument)
			return
		}
		seen := map[int]bool{}
		for _, id := range ids {
			require.True(t, id >= 0 && id < 5 && !seen[id], "ids %v from %q", ids, s)
			seen[id] = true
		}
	})
}
