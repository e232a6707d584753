package server

import (
	"bytes"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"
)

// mustRead is the request an inference route hands its handler (readRequest of r).
func mustRead(r *http.Request) *request {
	in, err := readRequest(r)
	if err != nil {
		panic(err)
	}
	return in
}

// requireClientError fails unless err is nil or one of the errors that become a 4xx.
func requireClientError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.items != nil:
		if len(ae.items) == 0 {
			t.Fatalf("validation error without items")
		}
	case errors.As(err, &ae):
		if ae.status < 400 || ae.status >= 500 {
			t.Fatalf("client input gave status %d: %v", ae.status, err)
		}
	default:
		t.Fatalf("client input gave an unclassified error (would be a 500): %v", err)
	}
}

func FuzzImageRequest(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"Volcano on a beach","negative_prompt":"low quality","num_inference_steps":20,"seed":0,"guidance_scale":7.0,"number_of_images":1}`,
		`{"prompt":"a","guidance_scale":"5","crop_coords_top_left":[1,2.5],"timesteps":[999,1]}`,
		`{"prompt":null}`, `[]`, `{"prompt":"a","guidance_scale":1e999}`, `{"prompt":"\u00e9","seed":-9223372036854775808}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseImageRequest(data, imageDefaults{steps: 20})
		requireClientError(t, err)
		if err != nil {
			return
		}
		if r.NumInferenceSteps < 12 || r.NumInferenceSteps > 50 || r.NumberOfImages < 1 || r.NumberOfImages > 4 ||
			r.GuidanceScale < 1 || r.GuidanceScale > 20 || r.GuidanceRescale < 0 || r.GuidanceRescale > 1 {
			t.Fatalf("accepted out-of-range request: %+v", r)
		}
	})
}

func FuzzAudioUploadJSON(f *testing.F) {
	for _, s := range []string{`{"file":"UklGRg==","stream":true}`, `{"file":123}`, `{"file":"data:audio/wav;base64,AAAA","is_preprocessing_enabled":"no"}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := httptest.NewRequest(http.MethodPost, "/audio/transcriptions", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		_, err := parseAudioUpload(mustRead(req))
		requireClientError(t, err)
	})
}

func FuzzMultipart(f *testing.F) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.SetBoundary("zz")
	fw, _ := w.CreateFormFile("file", "a.wav")
	_, _ = fw.Write([]byte("RIFF....WAVE"))
	_ = w.WriteField("stream", "true")
	_ = w.WriteField("top_k", "5")
	_ = w.Close()
	f.Add(b.Bytes())
	f.Add([]byte("--zz\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc\r\n--zz--\r\n"))
	f.Add([]byte("--zz\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func() error{
			func() error {
				req := httptest.NewRequest(http.MethodPost, "/audio/transcriptions", bytes.NewReader(data))
				req.Header.Set("Content-Type", "multipart/form-data; boundary=zz")
				_, err := parseAudioUpload(mustRead(req))
				return err
			},
			func() error {
				req := httptest.NewRequest(http.MethodPost, "/cnn/search-image", bytes.NewReader(data))
				req.Header.Set("Content-Type", "multipart/form-data; boundary=zz")
				_, err := parseCNNUpload(mustRead(req))
				return err
			},
		} {
			requireClientError(t, parse())
		}
	})
}

func FuzzCNNUploadJSON(f *testing.F) {
	for _, s := range []string{`{"prompt":"iVBORw0KGgo=","top_k":3}`, `{"prompt":"data:image/png;base64,AAA"}`, `{"prompt":"%%%","min_confidence":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := httptest.NewRequest(http.MethodPost, "/cnn/search-image", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		up, err := parseCNNUpload(mustRead(req))
		requireClientError(t, err)
		if err == nil && (up.topK < 1 || up.minConfidence < 0 || up.minConfidence > 100) {
			t.Fatalf("accepted out-of-range request: %+v", up)
		}
	})
}

func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"aGVsbG8=", "aGVsbG8", "data:x;base64,aGk=", " a G k = ", "===", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := decodeBase64(s)
		if err == nil && len(out) > len(s) {
			t.Fatalf("decoded %d bytes from %d characters", len(out), len(s))
		}
	})
}
