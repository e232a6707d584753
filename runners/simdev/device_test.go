//go:build cgo

package simdev

import (
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

func TestSimConfigFor(t *testing.T) {
	mesh := func(r, c int) config.MeshShape { return config.MeshShape{Rows: r, Cols: c} }
	tests := []struct {
		name     string
		model    string
		mesh     config.MeshShape
		settings *config.Settings
		want     *Config
		scale    float64
	}{
		{"no settings", catalogue.RunnerSDXL, mesh(1, 1), nil, nil, 0},
		{"unknown service", catalogue.RunnerMock, mesh(1, 1), processSettings(func(s *config.Settings) { s.ModelService = "nonesuch" }), nil, 0},
		{"in process: a submesh of the shared parent", catalogue.RunnerSDXL, mesh(1, 1), &config.Settings{WorkerIsolation: config.IsolationInProcess,
			TraceRegionSize: config.DefaultTraceRegionSize, MockStepLatency: 2 * time.Millisecond}, &Config{
			Opts: ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, DeviceIDs: []int{3}, L1SmallSize: 32768, TraceRegionSize: 34541598,
				CommandQueues: 1, ProgramCache: true},
			Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet", Shared: true}, 0.002 / 0.1903},
		{"MOCK_STEP_SECONDS=0 is no device time, not the programs' own", catalogue.RunnerSDXL, mesh(1, 1),
			processSettings(func(s *config.Settings) { s.MockStepLatency = 0 }), &Config{
				Opts:     ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768, TraceRegionSize: 34541598, CommandQueues: 1, ProgramCache: true},
				Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet"}, ttnn.SimNoLatency},
		{"sdxl", catalogue.RunnerSDXL, mesh(1, 1), processSettings(nil), &Config{
			Opts:     ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768, TraceRegionSize: 34541598, CommandQueues: 1, ProgramCache: true},
			Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet"}, 0.002 / 0.1903},
		{"sd3.5 on a T3K mesh", catalogue.RunnerSD35, mesh(2, 4), processSettings(nil), &Config{
			Opts: ttnn.Options{Mesh: ttnn.MeshShape{Rows: 2, Cols: 4}, L1SmallSize: 32768, TraceRegionSize: 25_000_000,
				CommandQueues: 1, Fabric: ttnn.Fabric1D, ProgramCache: true},
			Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet"}, 0.002 / 0.1903},
		{"sd3.5 with TRACE_REGION_SIZE", catalogue.RunnerSD35, mesh(4, 8), processSettings(func(s *config.Settings) { s.TraceRegionSize, s.TraceRegionSizeSet = 5000, true }), &Config{
			Opts: ttnn.Options{Mesh: ttnn.MeshShape{Rows: 4, Cols: 8}, L1SmallSize: 32768, TraceRegionSize: 5000,
				CommandQueues: 1, Fabric: ttnn.Fabric1D, ProgramCache: true},
			Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet"}, 0.002 / 0.1903},
		{"whisper", catalogue.RunnerWhisper, mesh(1, 1), processSettings(nil), &Config{
			Opts:     ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 1024, TraceRegionSize: 100_000_000, CommandQueues: 2, ProgramCache: true},
			Programs: []string{"whisper-encoder", "whisper-decoder-step"}, Traced: "whisper-decoder-step"}, 0.001 / (0.1535/30 + 3*0.009524)},
		{"resnet on two chips", catalogue.RunnerResNet, mesh(1, 2), processSettings(nil), &Config{
			Opts: ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 2}, L1SmallSize: 32768, TraceRegionSize: 1_470_464, CommandQueues: 2,
				Dispatch: ttnn.DispatchEth, ProgramCache: true},
			Programs: []string{"resnet50"}, Traced: "resnet50"}, 0.001 / 0.003404},
		{"mock follows MODEL_SERVICE", catalogue.RunnerMock, config.MeshShape{}, processSettings(func(s *config.Settings) { s.ModelService = "CNN" }), &Config{
			Opts:     ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768, TraceRegionSize: 1_470_464, CommandQueues: 2, ProgramCache: true},
			Programs: []string{"resnet50"}, Traced: "resnet50"}, 0.001 / 0.003404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ConfigFor(tt.model, runners.WorkerSpec{Mesh: tt.mesh, Devices: []int{3, 4}, Settings: tt.settings})
			if tt.want == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.InDelta(t, tt.scale, got.Opts.SimLatencyScale, 1e-12)
			require.Positive(t, got.Opts.SimLatencyScale, "0 would mean the programs' own latencies")
			got.Opts.SimLatencyScale = 0
			require.Equal(t, tt.want, got)
		})
	}
}
