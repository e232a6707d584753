package families_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
	"github.com/tenstorrent/tt-media-server-go/server"
)

// madeUp is a model that exists nowhere but in this file: one catalogue entry and its family's
// factory are all it takes to be loaded by config, listed in /v1/models and served on its route.
const madeUp = "tt-made-up-classifier"

func addMadeUp(t *testing.T, reg *runners.Registry) {
	t.Helper()
	resnetModel, _ := catalogue.Lookup(catalogue.RunnerResNet)
	m := resnetModel // the ResNet-50 programs and device options, under another name
	m.Name, m.Canonical, m.Default, m.ModelNames, m.Presets = madeUp, "made-up-classifier-1", false, nil, nil
	t.Cleanup(catalogue.Add(m))
	f := resnet.SimFactory(madeUp)
	reg.Register(madeUp, f, f)
}

func TestMadeUpModelServedEndToEnd(t *testing.T) {
	reg := families.NewRegistry()
	addMadeUp(t, reg)
	do := serve(t, reg, map[string]string{"MODEL_RUNNER": madeUp, "MOCK_CNN_SECONDS": "0"})

	status, models := do(http.MethodGet, "/v1/models", nil)
	require.Equal(t, http.StatusOK, status)
	var ids []string
	for _, m := range models["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	require.Equal(t, []string{"made-up-classifier-1", madeUp}, ids)

	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var pic bytes.Buffer
	require.NoError(t, png.Encode(&pic, img))
	body, err := json.Marshal(map[string]any{"prompt": base64.StdEncoding.EncodeToString(pic.Bytes()), "top_k": 2, "min_confidence": 0})
	require.NoError(t, err)
	status, answer := do(http.MethodPost, "/v1/cnn/search-image", body)
	require.Equal(t, http.StatusOK, status, "answer: %v", answer)
	data, ok := answer["image_data"].([]any)
	require.True(t, ok, "answer: %v", answer)
	require.Len(t, data, 1)
	out := data[0].(map[string]any)["output"].(map[string]any)
	require.Len(t, out["labels"], 2, "top_k=2 labels: %v", out)
}

// A MODEL x DEVICE cell's request_processing_timeout_seconds is the request's deadline, as at
// HEAD (BaseService.process waits that long for the worker's result): on a device slower than
// the cell allows, the request ends when the cell's time is up, not at the device's pace nor
// at DEFAULT_INFERENCE_TIMEOUT_SECONDS. HEAD then answers 500 {"detail": ""} (str() of
// asyncio's TimeoutError); this server answers 504 naming the deadline (README, differences).
// A deadline set in the environment wins over the cell's, as HEAD lets the environment win.
func TestPresetRequestTimeoutIsTheDeadline(t *testing.T) {
	const cell = 300 * time.Millisecond
	tests := []struct {
		name   string
		env    map[string]string
		status int
		detail string
	}{
		{"the cell's deadline", nil, http.StatusGatewayTimeout, "Inference timed out: inference timed out after 300ms"},
		{"REQUEST_PROCESSING_TIMEOUT_SECONDS wins", map[string]string{"REQUEST_PROCESSING_TIMEOUT_SECONDS": "0.2"},
			http.StatusGatewayTimeout, "Inference timed out: inference timed out after 200ms"},
		{"DEFAULT_INFERENCE_TIMEOUT_SECONDS wins", map[string]string{"DEFAULT_INFERENCE_TIMEOUT_SECONDS": "0.25"},
			http.StatusGatewayTimeout, "Inference timed out: inference timed out after 250ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := families.NewRegistry()
			resnetModel, _ := catalogue.Lookup(catalogue.RunnerResNet)
			m := resnetModel
			m.Name, m.Canonical, m.Default = madeUp, "made-up-classifier-1", false
			m.ModelNames = []catalogue.ModelName{{Name: "made-up-classifier-1"}}
			m.Presets = map[string]catalogue.Preset{catalogue.DeviceN150: {Mesh: [2]int{1, 1}, DeviceIDs: "(0)", RequestTimeout: cell}}
			t.Cleanup(catalogue.Add(m))
			sim := resnet.SimFactory(madeUp)
			f := func(spec runners.WorkerSpec) (runners.Runner, error) {
				r, err := sim(spec)
				return slowDevice{r}, err
			}
			reg.Register(madeUp, f, f)
			env := map[string]string{"MODEL": "made-up-classifier-1", "DEVICE": "n150"}
			for k, v := range tc.env {
				env[k] = v
			}
			do := serve(t, reg, env)
			var pic bytes.Buffer
			require.NoError(t, png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 8, 8))))
			body, err := json.Marshal(map[string]any{"prompt": base64.StdEncoding.EncodeToString(pic.Bytes())})
			require.NoError(t, err)
			status, answer := do(http.MethodPost, "/cnn/search-image", body)
			require.Equal(t, tc.status, status, "answer: %v", answer)
			require.Equal(t, map[string]any{"detail": tc.detail}, answer)
		})
	}
}

// slowDevice is a device slower than any deadline: it warms up as the simulator does, then
// finishes no task before the task's context ends (its deadline, or the client leaving).
type slowDevice struct{ runners.Runner }

func (d slowDevice) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i, task := range tasks {
		<-task.Ctx.Done()
		out[i].Err = fmt.Errorf("the device was still running: %w", context.Cause(task.Ctx))
	}
	return out
}

// serve runs the server in process (mock-device mode) as cmd/tt-media-server wires it, on reg
// and the settings env gives, and returns a client of it.
func serve(t *testing.T, reg *runners.Registry, env map[string]string) func(method, path string, body []byte) (int, map[string]any) {
	t.Helper()
	base := map[string]string{"API_KEY": "k", "MOCK_DEVICES_COUNT": "1", "MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0"}
	for k, v := range env {
		base[k] = v
	}
	settings, err := config.LoadFrom(func(k string) (string, bool) { v, ok := base[k]; return v, ok }, "", true)
	require.NoError(t, err)
	service, err := reg.Service(settings.ModelRunner)
	require.NoError(t, err)
	sched := scheduler.New(scheduler.Config{Groups: settings.DeviceGroups, QueueSize: 4, MaxBatchSize: 1,
		Timeout: settings.InferenceTimeout, CheckInterval: time.Hour},
		func(g config.DeviceGroup) (runners.Runner, error) {
			return reg.New(settings.ModelRunner, runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Mesh: settings.DeviceMeshShape, Settings: settings})
		})
	ctx, cancel := context.WithCancel(context.Background())
	sched.Start(ctx)
	srv := httptest.NewServer(server.New(server.Deps{Settings: settings, Service: service, Sched: sched, Mock: true}).Handler())
	t.Cleanup(func() {
		srv.Close()
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		require.NoError(t, sched.Stop(stop))
		cancel()
	})
	require.Eventually(t, sched.Ready, 10*time.Second, 10*time.Millisecond, "the worker did not warm up")
	return func(method, path string, body []byte) (int, map[string]any) {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
}
