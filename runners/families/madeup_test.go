package families_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
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
		Timeout: time.Minute, CheckInterval: time.Hour},
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
