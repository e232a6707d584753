package bombpng

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestZeroRGBA16(t *testing.T) {
	tests := []struct {
		name    string
		w, h    int
		wantErr bool
	}{
		{name: "small", w: 3, h: 2},
		{name: "bomb", w: 6300, h: 6300},
		{name: "zero width", w: 0, h: 5, wantErr: true},
		{name: "negative height", w: 5, h: -1, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ZeroRGBA16(tc.w, tc.h)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			cfg, err := png.DecodeConfig(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, tc.w, cfg.Width)
			require.Equal(t, tc.h, cfg.Height)
			require.Less(t, len(data), 400_000, "a bomb is small on the wire")
		})
	}
	img, err := png.Decode(bytes.NewReader(must(t, 3, 2)))
	require.NoError(t, err)
	r, g, b, a := img.At(2, 1).RGBA()
	require.Zero(t, r|g|b|a, "every pixel is zero")
}

func must(t *testing.T, w, h int) []byte {
	t.Helper()
	data, err := ZeroRGBA16(w, h)
	require.NoError(t, err)
	return data
}
