package sdk_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
	"github.com/tenstorrent/tt-media-server-go/server"
)

// faultPrompt is the image prompt faultSched fails with an internal error.
const faultPrompt = "fault:500"

// faultSched is the real scheduler with one seam: an image request with faultPrompt fails
// the way a broken runner would (an error that wraps no sentinel: 500).
//
// This is the only status not provoked in the real binary: its mock runners fail only with
// the errors the server maps to 4xx/503/504 (bad requests, worker deaths, timeouts), so a 500
// needs an injected fault. Every other error status of the suites comes from the binary.
type faultSched struct{ *scheduler.Scheduler }

func (f faultSched) Submit(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
	if r, ok := req.(*runners.ImageRequest); ok && r.Prompt == faultPrompt {
		return nil, errors.New("simulated device fault")
	}
	return f.Scheduler.Submit(ctx, req, emit)
}

// faultServer serves the mock SDXL in process, wired as cmd/tt-media-server wires it but with
// faultSched, and returns its /v1 base URL.
func faultServer(t *testing.T) string {
	t.Helper()
	env := map[string]string{
		"MODEL_RUNNER": catalogue.RunnerSDXL, "API_KEY": apiKey, "MOCK_DEVICES_COUNT": "1",
		"MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0",
	}
	settings, err := config.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, "", true)
	require.NoError(t, err)
	reg := families.NewRegistry()
	service, err := reg.Service(settings.ModelRunner)
	require.NoError(t, err)
	sched := scheduler.New(scheduler.Config{
		Groups: settings.DeviceGroups, QueueSize: settings.MaxQueueSize, MaxBatchSize: settings.MaxBatchSize,
		Timeout: settings.InferenceTimeout, MaxRestarts: settings.MaxWorkerRestarts, CheckInterval: time.Hour,
	}, func(g config.DeviceGroup) (runners.Runner, error) {
		return reg.New(settings.ModelRunner, runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Mesh: settings.DeviceMeshShape, Settings: settings})
	})
	ctx, cancel := context.WithCancel(context.Background())
	sched.Start(ctx)
	srv := httptest.NewServer(server.New(server.Deps{Settings: settings, Service: service, Sched: faultSched{sched}, Mock: true}).Handler())
	t.Cleanup(func() {
		srv.Close()
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		require.NoError(t, sched.Stop(stop))
		cancel()
	})
	require.Eventually(t, sched.Ready, 10*time.Second, 10*time.Millisecond, "mock workers did not warm up")
	return srv.URL + "/v1"
}
