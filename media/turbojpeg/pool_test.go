package turbojpeg

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// validJPEG is a small baseline colour JPEG (the native encoder's when the library loads).
func validJPEG(t testing.TB) []byte {
	t.Helper()
	data, err := Encode(picture(64, 48), 85)
	require.NoError(t, err)
	return data
}

// segment returns the offset of the first marker 0xFF m in a JPEG's header segments, walking
// them from SOI (so that entropy-coded bytes are never mistaken for a marker); -1 if absent.
func segment(data []byte, m byte) int {
	for i := 2; i+4 <= len(data) && data[i] == 0xFF; {
		if data[i+1] == m {
			return i
		}
		if data[i+1] == 0xDA { // SOS: the scan follows, no more header segments
			return -1
		}
		i += 2 + int(binary.BigEndian.Uint16(data[i+2:]))
	}
	return -1
}

// malformed returns the four kinds of bad JPEG that left the pooled TurboJPEG handle broken
// (issue 30), each made by editing the bytes of valid: a 12-bit SOF, the file cut off inside
// its headers, an SOF with 0 components, and a lossless SOF3.
func malformed(t testing.TB, valid []byte) map[string][]byte {
	t.Helper()
	sof := segment(valid, 0xC0)
	dht := segment(valid, 0xC4)
	require.Positive(t, sof, "no SOF0 in the test JPEG")
	require.Positive(t, dht, "no DHT in the test JPEG")
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	return map[string][]byte{
		"12-bit precision": edit(func(b []byte) []byte { b[sof+4] = 12; return b }),
		"cut inside headers": edit(func(b []byte) []byte {
			return b[:dht+10]
		}),
		"SOF with 0 components": edit(func(b []byte) []byte {
			n := int(b[sof+9])
			b[sof+9] = 0
			binary.BigEndian.PutUint16(b[sof+2:], 8)
			return append(b[:sof+10], b[sof+10+3*n:]...)
		}),
		"lossless SOF3": edit(func(b []byte) []byte { b[sof+1] = 0xC3; return b }),
	}
}

// TestMalformedDoesNotPoisonPool is issue 30's critical bug: after one malformed JPEG was
// refused, every later valid JPEG was refused too ("two SOI markers") because the TurboJPEG
// handle that saw the fatal error went back to the pool. Every kind, then many valid decodes
// (more than the pool holds), on both paths.
func TestMalformedDoesNotPoisonPool(t *testing.T) {
	valid := validJPEG(t)
	for name, run := range paths {
		t.Run(name, func(t *testing.T) {
			run(t, func() {
				for kind, bad := range malformed(t, valid) {
					_, _, err := Decode(bad, DecodeOptions{})
					require.ErrorIs(t, err, ErrInvalid, kind)
					// Whether a header-only read refuses a cut file differs by path (Go's stops
					// at the SOF); what matters is the instance it used.
					_, _ = DecodeHeader(bad)
					for i := range 40 {
						img, _, err := Decode(valid, DecodeOptions{RGB: true})
						require.NoError(t, err, "valid decode %d after %s", i, kind)
						require.Equal(t, 64, img.Bounds().Dx())
					}
				}
			})
		})
	}
}

// FuzzPoolInterleaved feeds arbitrary bytes and a valid JPEG alternately through the one pool
// of TurboJPEG instances (header read, full and DCT-scaled decode): whatever the arbitrary
// bytes did, the valid JPEG must still decode to the same pixels right after. The seeds are the
// valid JPEG and the four malformed kinds of issue 30.
//
//	go test -run X -fuzz FuzzPoolInterleaved -fuzztime 10m ./media/turbojpeg/
func FuzzPoolInterleaved(f *testing.F) {
	requireNative(f)
	valid := validJPEG(f)
	want, _, err := Decode(valid, DecodeOptions{RGB: true})
	require.NoError(f, err)
	f.Add(valid)
	for _, bad := range malformed(f, valid) {
		f.Add(bad)
	}
	check := func(t *testing.T, after string) {
		t.Helper()
		got, d, err := Decode(valid, DecodeOptions{RGB: true})
		require.NoError(t, err, "valid JPEG after %s", after)
		require.Equal(t, 1, d)
		require.Equal(t, want, got, "valid JPEG decoded differently after %s", after)
		h, err := DecodeHeader(valid)
		require.NoError(t, err, "valid header after %s", after)
		require.Equal(t, Header{Width: 64, Height: 48}, h)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeHeader(data)
		check(t, "a header read of the input")
		if err != nil || h.Width*h.Height > 1<<22 { // the server's budget refuses these before decoding
			return
		}
		_, _, _ = Decode(data, DecodeOptions{})
		check(t, "a decode of the input")
		_, _, _ = Decode(data, DecodeOptions{MinShortSide: 1, RGB: true})
		check(t, "a scaled decode of the input")
	})
}
