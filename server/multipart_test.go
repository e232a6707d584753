package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// part is one multipart part; a part with a filename is a file.
type part struct{ name, filename, value string }

func partsBody(t *testing.T, parts []part) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.name)
		if p.filename != "" {
			cd += fmt.Sprintf(`; filename=%q`, p.filename)
			h.Set("Content-Type", "application/octet-stream")
		}
		h.Set("Content-Disposition", cd)
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write([]byte(p.value))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return w.FormDataContentType(), b.Bytes()
}

// TestDuplicateFormFieldsRefused: a second part of a single-valued multipart field is a 400
// naming the field on every multipart route, in the route's dialect's envelope (before, a
// second mask on /v1/images/edits was accepted and the last one won); array fields may repeat.
// Each route's form without the duplicate is served (200), so the 400 is the duplicate's.
func TestDuplicateFormFieldsRefused(t *testing.T) {
	gray := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 4)
	}
	img := string(pngBytes(t, gray))
	alpha := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for i := range 64 {
		alpha.SetNRGBA(i%8, i/8, color.NRGBA{A: uint8(255 * (i % 2))})
	}
	mask := string(pngBytes(t, alpha))
	wav := string(testWAV(16000, 16000))

	routes := []struct {
		name, runner, path string
		svc                runners.Service
		openAI             bool
		form               []part   // served as is
		dups               []string // each sent once more: 400 naming it
		repeatable         []part   // added to form: still served
	}{
		{"edits", catalogue.RunnerSDXLEdit, "/v1/images/edits", runners.ServiceImage, true,
			[]part{{"image", "i.png", img}, {"mask", "m.png", mask}, {"prompt", "", "p"}, {"n", "", "1"}, {"seed", "", "3"}},
			[]string{"mask", "image", "prompt", "n", "seed"}, nil},
		{"image-to-image", catalogue.RunnerSDXLImg2Img, "/v1/images/image-to-image", runners.ServiceImage, true,
			[]part{{"image[]", "i.png", img}, {"prompt", "", "p"}, {"strength", "", "0.5"}, {"size", "", "auto"}},
			[]string{"image[]", "prompt", "strength", "size"}, nil},
		{"OpenAI transcription", "tt-whisper", "/v1/audio/transcriptions", runners.ServiceAudio, true,
			[]part{{"file", "a.wav", wav}, {"model", "", "whisper-1"}, {"language", "", "en"}, {"response_format", "", "verbose_json"}},
			[]string{"file", "model", "language", "response_format"},
			[]part{{"timestamp_granularities[]", "", "segment"}, {"timestamp_granularities[]", "", "word"}}},
		{"OpenAI translation", "tt-whisper", "/v1/audio/translations", runners.ServiceAudio, true,
			[]part{{"file", "a.wav", wav}, {"model", "", "whisper-1"}, {"temperature", "", "0"}},
			[]string{"file", "temperature"}, nil},
		{"HEAD transcription", "tt-whisper", "/audio/transcriptions", runners.ServiceAudio, false,
			[]part{{"file", "a.wav", wav}, {"stream", "", "false"}, {"is_preprocessing_enabled", "", "false"}},
			[]string{"file", "stream", "is_preprocessing_enabled"}, nil},
		{"HEAD transcription on /v1", "tt-whisper", "/v1/audio/transcriptions", runners.ServiceAudio, false,
			[]part{{"file", "a.wav", wav}, {"stream", "", "false"}},
			[]string{"file", "stream"}, nil},
		{"CNN", "tt-xla-resnet", "/cnn/search-image", runners.ServiceCNN, false,
			[]part{{"file", "i.png", img}, {"top_k", "", "3"}, {"min_confidence", "", "1"}, {"response_format", "", "json"}},
			[]string{"file", "top_k", "min_confidence", "response_format"}, nil},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			h, _ := pythonFieldsServer(t, rt.svc, rt.runner)
			post := func(parts []part) (int, []byte) {
				ct, body := partsBody(t, parts)
				w := do(h, http.MethodPost, rt.path, ct, "Bearer k", body)
				return w.Code, w.Body.Bytes()
			}
			code, body := post(rt.form)
			require.Equal(t, http.StatusOK, code, "the form without a duplicate: %s", body)
			if rt.repeatable != nil {
				code, body = post(append(append([]part(nil), rt.form...), rt.repeatable...))
				require.Equal(t, http.StatusOK, code, "an array field sent twice: %s", body)
			}
			for _, name := range rt.dups {
				t.Run(name, func(t *testing.T) {
					parts := append([]part(nil), rt.form...)
					for _, p := range rt.form {
						if p.name == name {
							parts = append(parts, p) // the same part again, at the end
						}
					}
					code, body := post(parts)
					require.Equal(t, http.StatusBadRequest, code, "%s", body)
					if rt.openAI {
						msg := requireEnvelope(t, body, "invalid_request_error", name, nil)
						require.Contains(t, msg, "more than once")
						return
					}
					var env struct {
						Detail string `json:"detail"`
					}
					require.NoError(t, json.Unmarshal(body, &env), "%s", body)
					require.Contains(t, env.Detail, fmt.Sprintf("%q was sent more than once", name))
				})
			}
		})
	}

	t.Run("image and image[] together", func(t *testing.T) {
		h, _ := pythonFieldsServer(t, runners.ServiceImage, catalogue.RunnerSDXLEdit)
		ct, body := partsBody(t, []part{{"image", "i.png", img}, {"image[]", "j.png", img}, {"mask", "m.png", mask}, {"prompt", "", "p"}})
		w := do(h, http.MethodPost, "/v1/images/edits", ct, "Bearer k", body)
		require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "image", nil)
	})
}
