package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// TestHEADImageAnswerShapes: HEAD's image answers field for field, route by route
// (open_ai_api/image.py): /generations sends {"images", "generation_time"}, /image-to-image
// and /edits send {"images"} only; the legacy /image/... paths answer as their /v1 twins.
func TestHEADImageAnswerShapes(t *testing.T) {
	img := base64.StdEncoding.EncodeToString(pngBytes(t, image.NewNRGBA(image.Rect(0, 0, 4, 4))))
	mask := base64.StdEncoding.EncodeToString(pngBytes(t, image.NewGray(image.Rect(0, 0, 4, 4))))
	tests := []struct {
		runner, path, body string
		fields             []string
	}{
		{catalogue.RunnerSDXL, "/v1/images/generations", `{"prompt": "p", "seed": 1}`, []string{"generation_time", "images"}},
		{catalogue.RunnerSDXL, "/image/generations", `{"prompt": "p", "seed": 1}`, []string{"generation_time", "images"}},
		{catalogue.RunnerSDXLImg2Img, "/v1/images/image-to-image", fmt.Sprintf(`{"prompt": "p", "image": %q}`, img), []string{"images"}},
		{catalogue.RunnerSDXLImg2Img, "/image/image-to-image", fmt.Sprintf(`{"prompt": "p", "image": %q}`, img), []string{"images"}},
		{catalogue.RunnerSDXLEdit, "/v1/images/edits", fmt.Sprintf(`{"prompt": "p", "image": %q, "mask": %q}`, img, mask), []string{"images"}},
		{catalogue.RunnerSDXLEdit, "/image/edits", fmt.Sprintf(`{"prompt": "p", "image": %q, "mask": %q}`, img, mask), []string{"images"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			s, _ := imageInputServer(t, tc.runner, "")
			w := serve(s, http.MethodPost, tc.path, "application/json", []byte(tc.body))
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			require.Equal(t, tc.fields, keys, "%s", w.Body.String())
			var images []string
			require.NoError(t, json.Unmarshal(m["images"], &images))
			require.Len(t, images, 1)
		})
	}
}
