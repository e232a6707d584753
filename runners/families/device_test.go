//go:build cgo

package families

import (
	"context"
	"image"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func processSettings(mod func(*config.Settings)) *config.Settings {
	s := &config.Settings{WorkerIsolation: config.IsolationProcess, TraceRegionSize: config.DefaultTraceRegionSize,
		MockStepLatency: 2 * time.Millisecond, MockAudioLatency: time.Millisecond, MockImageLatency: time.Millisecond}
	if mod != nil {
		mod(s)
	}
	return s
}

// unsetScale removes TTB_SIM_LATENCY_SCALE for the test, so the runner derives it.
func unsetScale(t *testing.T) {
	t.Setenv("TTB_SIM_LATENCY_SCALE", "")
	require.NoError(t, os.Unsetenv("TTB_SIM_LATENCY_SCALE"))
}

// TestRunnersOnTheSimulator: in a worker process the runners open the simulator with their
// options, hold one trace, produce exactly what the in-process runners produce, take the
// simulator's (scaled) time, and leave no handle behind.
func TestRunnersOnTheSimulator(t *testing.T) {
	reg := NewRegistry()
	white := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for i := range white.Pix {
		white.Pix[i] = 0xff
	}
	tests := []struct {
		runner string
		req    runners.Request
		info   func(t *testing.T, info ttnn.DeviceInfo)
	}{
		{catalogue.RunnerSDXL, &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 3, Seed: new(int64)}, func(t *testing.T, info ttnn.DeviceInfo) {
			require.Equal(t, uint64(32768), info.L1SmallSize)
			require.Equal(t, uint64(34541598), info.TraceRegionSize)
		}},
		{catalogue.RunnerWhisper, &runners.AudioRequest{Samples: make([]float32, 32000), SampleRate: 16000, Duration: 2,
			Segments: []runners.Span{{Start: 0, End: 1}}}, func(t *testing.T, info ttnn.DeviceInfo) {
			require.Equal(t, 2, info.CommandQueues)
			require.Equal(t, uint64(100_000_000), info.TraceRegionSize)
		}},
		{catalogue.RunnerResNet, &runners.CNNRequest{Image: white, TopK: 2}, func(t *testing.T, info ttnn.DeviceInfo) {
			require.Equal(t, uint64(1_470_464), info.TraceRegionSize)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.runner, func(t *testing.T) {
			unsetScale(t)
			spec := runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Mesh: config.MeshShape{Rows: 1, Cols: 1}}
			spec.Settings = processSettings(nil)
			r, err := reg.New(tt.runner, spec)
			require.NoError(t, err)
			require.NoError(t, r.Warmup(context.Background()))
			c, err := ttnn.Counts()
			require.NoError(t, err)
			require.Equal(t, uint64(1), c.Devices)
			require.Equal(t, uint64(1), c.Traces)
			tt.info(t, devInfo(t, r))

			spec.Settings = &config.Settings{}
			local, err := reg.New(tt.runner, spec)
			require.NoError(t, err)
			task := []runners.Task{{Ctx: context.Background(), Request: tt.req}}
			got, want := r.Run(context.Background(), task), local.Run(context.Background(), task)
			require.NoError(t, got[0].Err)
			require.NoError(t, want[0].Err)
			require.Equal(t, want[0].Value, got[0].Value)

			require.NoError(t, r.Close())
			require.NoError(t, r.Close())
			require.NoError(t, local.Close())
			c, err = ttnn.Counts()
			require.NoError(t, err)
			require.Equal(t, ttnn.LiveCounts{}, c)
		})
	}
}

func devInfo(t *testing.T, r runners.Runner) ttnn.DeviceInfo {
	t.Helper()
	d, ok := r.(interface {
		DeviceInfo() (ttnn.DeviceInfo, bool)
	})
	require.True(t, ok, "%T is a simulated runner", r)
	info, ok := d.DeviceInfo()
	require.True(t, ok, "%T runs on the simulator", r)
	return info
}

// TestSimulatorTimeFollowsMockLatency: MOCK_STEP_SECONDS sets the simulator's latency scale,
// so ten UNet steps and one VAE decode take 10×step + 663/190.3×step of device time.
func TestSimulatorTimeFollowsMockLatency(t *testing.T) {
	unsetScale(t)
	reg := NewRegistry()
	r, err := reg.New(catalogue.RunnerSDXL, runners.WorkerSpec{WorkerID: "0", Devices: []int{0},
		Settings: processSettings(func(s *config.Settings) { s.MockStepLatency = 20 * time.Millisecond })})
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Warmup(context.Background()))
	start := time.Now()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 10, Seed: new(int64)}}})
	took := time.Since(start)
	require.NoError(t, out[0].Err)
	vae := 663.0 / 190.3 * float64(20*time.Millisecond)
	floor := 10*20*time.Millisecond + time.Duration(vae)
	require.GreaterOrEqual(t, took, floor)
	require.Less(t, took, floor+2*time.Second)
}

// TestDispatchTimeoutIsDeviceLost: a dispatch timeout poisons the device; the runner reports
// it as runners.ErrDeviceLost so the worker is reset and restarted.
func TestDispatchTimeoutIsDeviceLost(t *testing.T) {
	// A lost device poisons the simulator for the rest of its process (as TT-Metal does), so
	// this test runs in a child process of its own: the other tests, and -count=N reruns,
	// keep a healthy simulator.
	if os.Getenv("TT_MOCK_DEVICE_LOST_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDispatchTimeoutIsDeviceLost$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TT_MOCK_DEVICE_LOST_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoErrorf(t, err, "child test failed:\n%s", out)
		return
	}
	t.Setenv("TTB_SIM_LATENCY_SCALE", "0.001")
	t.Setenv("TTB_SIM_HANG_SECONDS", "5")
	t.Setenv("TTB_SIM_HANG_AFTER", "6") // warm-up runs 4 programs; the 2nd step of the request hangs
	t.Setenv("TT_METAL_OPERATION_TIMEOUT_SECONDS", "0.05")
	reg := NewRegistry()
	r, err := reg.New(catalogue.RunnerSDXL, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Settings: processSettings(nil)})
	require.NoError(t, err)
	require.NoError(t, r.Warmup(context.Background()))
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 4, Seed: new(int64)}}})
	require.ErrorIs(t, out[0].Err, runners.ErrDeviceLost)
	require.ErrorIs(t, out[0].Err, ttnn.ErrTimeout)
	require.ErrorContains(t, out[0].Err, "UNet step 2 of 4")
	require.NoError(t, r.Close(), "the loss was reported by the run; close frees the host side quietly")
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, ttnn.LiveCounts{}, c)
}
