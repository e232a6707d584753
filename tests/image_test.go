package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeImageBody is the Python README's image-generation request body, verbatim.
const readmeImageBody = `{
  "prompt": "Volcano on a beach",
  "negative_prompt": "low quality",
  "num_inference_steps": 20,
  "seed": 0,
  "guidance_scale": 7.0,
  "number_of_images": 1
}`

// generateV1 posts an OpenAI images request to /v1/images/generations and returns the decoded
// b64_json images.
func generateV1(t *testing.T, s *server, body string) [][]byte {
	t.Helper()
	r := s.postJSON(t, "/v1/images/generations", body)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	var out struct {
		Created int64 `json:"created"`
		Data    []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
	}
	r.JSON(t, &out)
	require.NotZero(t, out.Created)
	require.NotEmpty(t, out.Data, "no images in %s", r)
	imgs := make([][]byte, len(out.Data))
	for i, d := range out.Data {
		data, err := base64.StdEncoding.DecodeString(d.B64JSON)
		require.NoErrorf(t, err, "image %d is not standard base64", i)
		imgs[i] = data
	}
	return imgs
}

// requireImage decodes any supported format and checks the size.
func requireImage(t *testing.T, data []byte, size int) {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, size, img.Bounds().Dx())
	require.Equal(t, size, img.Bounds().Dy())
}

const v1ImageBody = `{"prompt": "Volcano on a beach", "negative_prompt": "low quality", "seed": 0, "n": 1, "size": "1024x1024"}`

// generate posts an image request that must succeed and returns the decoded images.
func generate(t *testing.T, s *server, path, body string) [][]byte {
	t.Helper()
	r := s.postJSON(t, path, body)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	var out struct {
		Images []string `json:"images"`
	}
	r.JSON(t, &out)
	require.NotEmpty(t, out.Images, "no images in %s", r)
	imgs := make([][]byte, len(out.Images))
	for i, b64 := range out.Images {
		data, err := base64.StdEncoding.DecodeString(b64)
		require.NoErrorf(t, err, "image %d is not standard base64", i)
		imgs[i] = data
	}
	return imgs
}

// requireJPEG checks that data is a complete JPEG of size×size pixels.
func requireJPEG(t *testing.T, data []byte, size int) {
	t.Helper()
	require.Equal(t, "image/jpeg", http.DetectContentType(data))
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, "jpeg", format)
	require.Equal(t, size, cfg.Width)
	require.Equal(t, size, cfg.Height)
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err, "the JPEG does not decode in full")
	require.Equal(t, image.Rect(0, 0, size, size), img.Bounds())
}

// validationItem fetches detail[0] of a FastAPI 422 answer, checking the envelope's shape.
func validationItem(t *testing.T, r reply) map[string]any {
	t.Helper()
	require.Equalf(t, http.StatusUnprocessableEntity, r.Status, "%s", r)
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	var out struct {
		Detail []map[string]any `json:"detail"`
	}
	r.JSON(t, &out)
	require.NotEmpty(t, out.Detail, "detail is not a non-empty list: %s", r)
	for _, it := range out.Detail {
		for _, k := range []string{"type", "loc", "msg", "input"} {
			require.Containsf(t, it, k, "validation item lacks %q: %v", k, it)
		}
		require.NotEmpty(t, it["msg"])
	}
	return out.Detail[0]
}

func TestImageSDXL(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace"})

	var readme []byte
	t.Run("README request gives one 1024x1024 JPEG", func(t *testing.T) {
		imgs := generate(t, s, "/image/generations", readmeImageBody)
		require.Len(t, imgs, 1)
		requireJPEG(t, imgs[0], 1024)
		readme = imgs[0]
	})

	t.Run("same request gives identical bytes", func(t *testing.T) {
		require.NotNil(t, readme, "the README request failed")
		again := generate(t, s, "/image/generations", readmeImageBody)
		require.True(t, bytes.Equal(readme, again[0]), "a repeated request gave different bytes")
	})

	t.Run("v1 route serves OpenAI's shape, deterministically", func(t *testing.T) {
		v1 := generateV1(t, s, v1ImageBody)
		require.Len(t, v1, 1)
		requireImage(t, v1[0], 1024)
		again := generateV1(t, s, v1ImageBody)
		require.True(t, bytes.Equal(v1[0], again[0]), "/v1/images/generations is not deterministic")
	})

	t.Run("seed and prompt change the image", func(t *testing.T) {
		require.NotNil(t, readme, "the README request failed")
		seed1 := generate(t, s, "/image/generations", strings.Replace(readmeImageBody, `"seed": 0`, `"seed": 1`, 1))[0]
		prompt := generate(t, s, "/image/generations", strings.Replace(readmeImageBody, "Volcano on a beach", "Glacier in a desert", 1))[0]
		requireJPEG(t, seed1, 1024)
		requireJPEG(t, prompt, 1024)
		require.False(t, bytes.Equal(readme, seed1), "seed 1 gave the same bytes as seed 0")
		require.False(t, bytes.Equal(readme, prompt), "another prompt gave the same bytes")
		require.False(t, bytes.Equal(seed1, prompt))
	})

	t.Run("number_of_images 3 uses seeds 5, 6, 7", func(t *testing.T) {
		const tmpl = `{"prompt":"Volcano on a beach","negative_prompt":"low quality","num_inference_steps":12,"guidance_scale":7.0,"seed":%d,"number_of_images":%d}`
		three := generate(t, s, "/image/generations", fmt.Sprintf(tmpl, 5, 3))
		require.Len(t, three, 3)
		for i, img := range three {
			requireJPEG(t, img, 1024)
			single := generate(t, s, "/image/generations", fmt.Sprintf(tmpl, 5+i, 1))
			require.Len(t, single, 1)
			require.Truef(t, bytes.Equal(single[0], img), "image %d differs from the single image for seed %d", i, 5+i)
		}
		require.False(t, bytes.Equal(three[0], three[1]))
		require.False(t, bytes.Equal(three[1], three[2]))
	})

	t.Run("lax guidance_scale string", func(t *testing.T) {
		str := generate(t, s, "/image/generations", `{"prompt":"Volcano on a beach","guidance_scale":"5","seed":3,"num_inference_steps":12}`)
		num := generate(t, s, "/image/generations", `{"prompt":"Volcano on a beach","guidance_scale":5.0,"seed":3,"num_inference_steps":12}`)
		require.Equal(t, num, str, `"5" must be read as 5.0`)
	})

	t.Run("422 validation errors in FastAPI shape", func(t *testing.T) {
		tests := []struct {
			name     string
			body     string
			wantType string
			wantLoc  []any
			wantCtx  map[string]any
		}{
			{"missing prompt", `{"guidance_scale":7.0}`, "missing", []any{"body", "prompt"}, nil},
			// HEAD: guidance_scale is optional (5.0); steps are ge=4 in the schema, and the
			// runner's floor (12 for SDXL) is a field validator's value_error.
			{"num_inference_steps below 4", `{"prompt":"x","num_inference_steps":3}`,
				"greater_than_equal", []any{"body", "num_inference_steps"}, map[string]any{"ge": float64(4)}},
			{"num_inference_steps below the SDXL floor", `{"prompt":"x","guidance_scale":7.0,"num_inference_steps":11}`,
				"value_error", []any{"body", "num_inference_steps"}, map[string]any{"error": map[string]any{}}},
			{"num_inference_steps above 50", `{"prompt":"x","guidance_scale":7.0,"num_inference_steps":51}`,
				"less_than_equal", []any{"body", "num_inference_steps"}, map[string]any{"le": float64(50)}},
			{"guidance_scale not a number", `{"prompt":"x","guidance_scale":"loud"}`, "float_parsing", []any{"body", "guidance_scale"}, nil},
			{"prompt not a string", `{"prompt":5,"guidance_scale":7.0}`, "string_type", []any{"body", "prompt"}, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				it := validationItem(t, s.postJSON(t, "/image/generations", tc.body))
				require.Equal(t, tc.wantType, it["type"])
				require.Equal(t, tc.wantLoc, it["loc"])
				if tc.wantCtx != nil {
					require.Equal(t, tc.wantCtx, it["ctx"])
				}
			})
		}
		t.Run("invalid JSON", func(t *testing.T) {
			it := validationItem(t, s.postJSON(t, "/image/generations", `{"prompt": "Volcano on a beach",`))
			require.Equal(t, "json_invalid", it["type"])
			loc, ok := it["loc"].([]any)
			require.True(t, ok)
			require.NotEmpty(t, loc)
			require.Equal(t, "body", loc[0])
		})
	})

	t.Run("timesteps and sigmas together are a 400", func(t *testing.T) {
		r := s.postJSON(t, "/image/generations", `{"prompt":"x","guidance_scale":7.0,"timesteps":[999,500,1],"sigmas":[14.6,1.0,0.03]}`)
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
		require.Contains(t, r.obj(t)["detail"], "Cannot pass both timesteps and sigmas")
	})

	t.Run("GET is 405", func(t *testing.T) {
		r := s.get(t, "/image/generations", "Authorization", bearer)
		require.Equalf(t, http.StatusMethodNotAllowed, r.Status, "%s", r)
	})
}

func TestImageSD35(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sd3.5"})
	t.Run("/v1/images/generations", func(t *testing.T) {
		imgs := generateV1(t, s, v1ImageBody)
		require.Len(t, imgs, 1)
		requireImage(t, imgs[0], 1024)
	})
	t.Run("/image/generations is deterministic (SD3.5 treats a missing seed as 0)", func(t *testing.T) {
		body := strings.Replace(readmeImageBody, `"seed": 0,`, ``, 1)
		first := generate(t, s, "/image/generations", body)
		require.Len(t, first, 1)
		requireJPEG(t, first[0], 1024)
		again := generate(t, s, "/image/generations", body)
		require.True(t, bytes.Equal(first[0], again[0]), "the same request gave different images")
	})
	t.Run("guidance_scale, prompt_2 and custom schedules are honoured", func(t *testing.T) {
		const base = `{"prompt": "Volcano on a beach", "seed": 3, "num_inference_steps": 12, "number_of_images": 1%s}`
		img := func(extra string) []byte {
			imgs := generate(t, s, "/v1/images/generations", fmt.Sprintf(base, extra))
			require.Len(t, imgs, 1)
			return imgs[0]
		}
		def := img("")
		require.Equal(t, def, img(`, "guidance_scale": 3.5`), "no guidance_scale is SD3.5's 3.5 (not HEAD's schema default 5.0)")
		for _, extra := range []string{`, "guidance_scale": 5.0`, `, "guidance_scale": 9.0`, `, "prompt_2": "a red sky"`,
			`, "negative_prompt_2": "blurry"`, `, "sigmas": [1.0, 0.7, 0.4, 0.1]`, `, "timesteps": [999, 700, 400, 100]`} {
			require.Falsef(t, bytes.Equal(def, img(extra)), "%s did not change the image", extra)
		}
		// OpenAI's dialect: the same extension.
		v1 := generateV1(t, s, v1ImageBody)[0]
		require.Equal(t, v1, generateV1(t, s, strings.Replace(v1ImageBody, `"n": 1`, `"n": 1, "guidance_scale": 3.5`, 1))[0])
		require.NotEqual(t, v1, generateV1(t, s, strings.Replace(v1ImageBody, `"n": 1`, `"n": 1, "guidance_scale": 8`, 1))[0])
	})
	t.Run("guidance_rescale and crop_coords_top_left are refused", func(t *testing.T) {
		for field, extra := range map[string]string{"guidance_rescale": `"guidance_rescale": 0.7`, "crop_coords_top_left": `"crop_coords_top_left": [8, 8]`} {
			r := s.postJSON(t, "/v1/images/generations", `{"prompt": "x", "number_of_images": 1, `+extra+`}`)
			require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
			require.Contains(t, r.obj(t)["detail"], field)
			require.Contains(t, r.obj(t)["detail"], "tt-sd3.5 does not support it")
		}
		// Their defaults are what SD3.5 does: accepted.
		generate(t, s, "/v1/images/generations", `{"prompt": "x", "number_of_images": 1, "guidance_rescale": 0, "crop_coords_top_left": [0, 0]}`)
	})
	t.Run("liveness names the runner", func(t *testing.T) {
		code, body := s.liveness(t)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "tt-sd3.5", body["runner_in_use"])
	})
	t.Run("no audio or cnn routes", func(t *testing.T) {
		for _, p := range []string{"/audio/transcriptions", "/cnn/search-image"} {
			r := s.postJSON(t, p, `{}`)
			require.Equalf(t, http.StatusNotFound, r.Status, "%s: %s", p, r)
		}
	})
}
