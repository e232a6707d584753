package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// TestImageModelFields: every image field reaches the runner or is a 400 naming it, per model
// and backend; a request without guidance_scale carries the model's default.
func TestImageModelFields(t *testing.T) {
	tests := []struct {
		name, runner, backend, class string
		path, body                   string
		status                       int
		field                        string  // named by the 400
		guidance                     float64 // the runner's GuidanceScale on 200
	}{
		{name: "SD3.5 default guidance", runner: catalogue.RunnerSD35, path: "/image/generations", body: `{"prompt":"a"}`, status: 200, guidance: 3.5},
		{name: "SD3.5 guidance honoured", runner: catalogue.RunnerSD35, path: "/image/generations", body: `{"prompt":"a","guidance_scale":7,"prompt_2":"b","sigmas":[1,0.5]}`, status: 200, guidance: 7},
		{name: "SD3.5 OpenAI default guidance", runner: catalogue.RunnerSD35, path: "/v1/images/generations", body: `{"prompt":"a","n":1}`, status: 200, guidance: 3.5},
		{name: "SDXL OpenAI default guidance", runner: catalogue.RunnerSDXL, path: "/v1/images/generations", body: `{"prompt":"a","n":1}`, status: 200, guidance: 5},
		{name: "SDXL default guidance", runner: catalogue.RunnerSDXL, path: "/image/generations", body: `{"prompt":"a"}`, status: 200, guidance: 5},
		{name: "SD3.5 guidance_rescale", runner: catalogue.RunnerSD35, path: "/image/generations", body: `{"prompt":"a","guidance_rescale":0.5}`, status: 400, field: "guidance_rescale"},
		{name: "SD3.5 crop", runner: catalogue.RunnerSD35, path: "/image/generations", body: `{"prompt":"a","crop_coords_top_left":[0,64]}`, status: 400, field: "crop_coords_top_left"},
		{name: "SDXL crop", runner: catalogue.RunnerSDXL, path: "/image/generations", body: `{"prompt":"a","crop_coords_top_left":[0,64],"guidance_rescale":0.5}`, status: 200, guidance: 5},
		{name: "HEAD's SD3.5 runner: prompt_2", runner: catalogue.RunnerSD35, backend: config.BackendPython, path: "/image/generations", body: `{"prompt":"a","prompt_2":"b"}`, status: 400, field: "prompt_2"},
		{name: "HEAD's SD3.5 runner: sigmas", runner: catalogue.RunnerSD35, backend: config.BackendPython, path: "/image/generations", body: `{"prompt":"a","sigmas":[1,0.5]}`, status: 400, field: "sigmas"},
		{name: "HEAD's SD3.5 runner: timesteps", runner: catalogue.RunnerSD35, backend: config.BackendPython, path: "/image/generations", body: `{"prompt":"a","timesteps":[900]}`, status: 400, field: "timesteps"},
		{name: "HEAD's SD3.5 runner: plain", runner: catalogue.RunnerSD35, backend: config.BackendPython, path: "/image/generations", body: `{"prompt":"a","guidance_scale":3.5}`, status: 200, guidance: 3.5},
		{name: "a hosted class may use them", runner: catalogue.RunnerSD35, backend: config.BackendPython, class: "m:C", path: "/image/generations", body: `{"prompt":"a","prompt_2":"b"}`, status: 200, guidance: 3.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openAISettings(tc.runner)
			s.Pools = []config.Pool{{Runner: tc.runner, Service: string(runners.ServiceImage), Backend: tc.backend}}
			s.PythonRunnerClass = tc.class
			f := imageFake()
			h := New(Deps{Settings: s, Service: runners.ServiceImage, Sched: f}).Handler()
			w := do(h, http.MethodPost, tc.path, "application/json", "Bearer k", []byte(tc.body))
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status != http.StatusOK {
				require.Contains(t, w.Body.String(), tc.field)
				return
			}
			req, ok := f.last.(*runners.ImageRequest)
			require.True(t, ok, "runner got %T", f.last)
			require.Equal(t, tc.guidance, req.GuidanceScale)
		})
	}
}
