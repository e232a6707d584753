package audio

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// hashF32 is the first 16 hex digits of the SHA-256 of the samples' float32 bits (little endian).
func hashF32(s []float32) string {
	h := sha256.New()
	var b [4]byte
	for _, v := range s {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TestMP3BitIdentical pins the MP3 path's output, full rate (target 0) and half rate + resampler
// (target 16 kHz), on every MP3 fixture. The hashes were recorded on 2026-11-25 while media/mp3dec
// still read go-mp3's internal tables by linkname, before they became our generated source
// (tables_iso.go): the decoder is bit-identical to what it was. Only amd64 is pinned: other
// architectures may fuse multiply-adds (Go allows it), which changes the last bits.
func TestMP3BitIdentical(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("output hashes are pinned for amd64; this is %s", runtime.GOARCH)
	}
	type want struct {
		n    int
		hash string
	}
	for _, tc := range []struct {
		file        string
		full, to16k want
	}{
		{"../mp3dec/testdata/dualchannel_44k1_blocktypes.mp3", want{67968, "db85e97bbd9e88a0"}, want{24660, "31fe5a6cd067991b"}},
		{"../mp3dec/testdata/mpeg25_12k_joint.mp3", want{19584, "924a97a7011fb7b1"}, want{26112, "191fb494dde4b82e"}},
		{"../mp3dec/testdata/mpeg25_8k_mono.mp3", want{13248, "3eb4fbbc68d2e6fb"}, want{26496, "27ab8e70d4adb478"}},
		{"../mp3dec/testdata/mpeg2_24k_joint.mp3", want{37440, "659cfbc7f2e18bd0"}, want{24960, "8ccde120b2c5b474"}},
		{"../mp3dec/testdata/stereo_44k1_intensity.mp3", want{67968, "99fad5b60dd283d7"}, want{24660, "147ce37177229560"}},
		{"shared:speech_a_22k05_vbr_mono.mp3", want{144375, "fecbb3ef49dc9834"}, want{104762, "790aae8d39ff112d"}},
		{"shared:speech_b_44k1_cbr128_stereo_id3.mp3", want{831146, "975ca92eed9079a4"}, want{301550, "174113b543893d36"}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			path := tc.file
			if name, ok := strings.CutPrefix(path, "shared:"); ok {
				path = shareddata.File(t, "audio", name)
			}
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			for _, c := range []struct {
				rate int
				w    want
			}{{0, tc.full}, {16000, tc.to16k}} {
				d, err := Decode(context.Background(), b, c.rate, Limits{})
				require.NoError(t, err)
				require.Len(t, d.Samples, c.w.n, "target rate %d", c.rate)
				require.Equal(t, c.w.hash, hashF32(d.Samples), "target rate %d: output changed", c.rate)
			}
		})
	}
}
