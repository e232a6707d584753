package tests

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image/color"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// twelveBit returns valid with its SOF0's sample precision set to 12 bits (a JPEG the server
// refuses: libjpeg-turbo's 8-bit TurboJPEG API cannot decode it).
func twelveBit(t *testing.T, valid []byte) []byte {
	t.Helper()
	out := append([]byte(nil), valid...)
	for i := 2; i+4 <= len(out) && out[i] == 0xFF && out[i+1] != 0xDA; i += 2 + int(binary.BigEndian.Uint16(out[i+2:])) {
		if out[i+1] == 0xC0 {
			out[i+4] = 12
			return out
		}
	}
	t.Fatal("no SOF0 in the test JPEG")
	return nil
}

// TestMalformedJPEGDoesNotPoisonDecoders is issue 30's critical bug on the binary: one 12-bit
// JPEG is refused with 400, then 40 valid JPEGs must all be served (before the fix every one
// got 400 "two SOI markers" until restart: the refused JPEG's libjpeg-turbo instance went back
// to its pool broken). On the CNN route and on image-to-image (edits share the decoder).
func TestMalformedJPEGDoesNotPoisonDecoders(t *testing.T) {
	t.Parallel()
	valid := encodeJPEG(t, drawPicture(96, 64, color.RGBA{20, 40, 220, 255}))
	bad := twelveBit(t, valid)
	for _, tc := range []struct {
		runner, path string
		body         func(img []byte) string
	}{
		{"tt-xla-resnet", cnnPath, func(img []byte) string {
			return fmt.Sprintf(`{"prompt":%q}`, base64.StdEncoding.EncodeToString(img))
		}},
		{"tt-sdxl-image-to-image", "/v1/images/image-to-image", func(img []byte) string {
			return fmt.Sprintf(`{"prompt":"x","image":%q,"num_inference_steps":12,"seed":1}`, base64.StdEncoding.EncodeToString(img))
		}},
	} {
		t.Run(tc.runner, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, map[string]string{"MODEL_RUNNER": tc.runner, "MOCK_DEVICES_COUNT": "1"})
			r := s.postJSON(t, tc.path, tc.body(bad))
			require.Equal(t, http.StatusBadRequest, r.Status, "the 12-bit JPEG: %s", r)
			statuses := map[int]int{}
			var first string
			for range 40 {
				r := s.postJSON(t, tc.path, tc.body(valid))
				statuses[r.Status]++
				if r.Status != http.StatusOK && first == "" {
					first = r.String()
				}
			}
			require.Equal(t, map[int]int{http.StatusOK: 40}, statuses, "40 valid JPEGs after the 12-bit one; first failure: %s", first)
		})
	}
}
