//go:build cgo

package families

import (
	"context"
	"image"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// TestInProcessWorkersOnSubmeshes: in process, under the server's shared parent mesh, each
// worker's runner opens the submesh of its group's chips through the C ABI; the workers serve
// at the same time, give what a runner without a device gives, and release their submeshes.
func TestInProcessWorkersOnSubmeshes(t *testing.T) {
	t.Setenv("TTB_SIM_LATENCY_SCALE", "0.001")
	require.NoError(t, ttnn.Init("sim"))
	inproc := func(mod func(*config.Settings)) *config.Settings {
		s := processSettings(mod)
		s.WorkerIsolation = config.IsolationInProcess
		return s
	}
	white := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for i := range white.Pix {
		white.Pix[i] = 0xff
	}
	tests := []struct {
		runner string
		req    runners.Request
	}{
		{catalogue.RunnerSDXL, &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 3, Seed: new(int64)}},
		{catalogue.RunnerWhisper, &runners.AudioRequest{Samples: make([]float32, 32000), SampleRate: 16000, Duration: 2,
			Segments: []runners.Span{{Start: 0, End: 1}}}},
		{catalogue.RunnerResNet, &runners.CNNRequest{Image: white, TopK: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.runner, func(t *testing.T) {
			reg := NewRegistry()
			settings := inproc(nil)
			// The reference: the runner without a device (no shared parent yet).
			local, err := reg.New(tt.runner, runners.WorkerSpec{WorkerID: "x", Settings: &config.Settings{}})
			require.NoError(t, err)
			require.NoError(t, local.Warmup(context.Background()))
			task := []runners.Task{{Ctx: context.Background(), Request: tt.req}}
			want := local.Run(context.Background(), task)
			require.NoError(t, want[0].Err)
			require.NoError(t, local.Close())
			// Three groups of one chip: the parent is 3x1 over chips 2, 3, 4 with the model's options.
			groups := [][]int{{2}, {3}, {4}}
			opts, ok := simdev.DeviceOptions(tt.runner, settings, config.MeshShape{Rows: 3, Cols: 1})
			require.True(t, ok)
			opts.DeviceIDs = []int{2, 3, 4}
			parent, err := ttnn.OpenParent(context.Background(), opts)
			require.NoError(t, err)
			defer func() {
				require.NoError(t, parent.Close())
				c, err := ttnn.Counts()
				require.NoError(t, err)
				require.Equal(t, ttnn.LiveCounts{}, c)
			}()

			rs := make([]runners.Runner, len(groups))
			for i, g := range groups {
				rs[i], err = reg.New(tt.runner, runners.WorkerSpec{WorkerID: "w", Devices: g, Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: settings, Parent: parent})
				require.NoError(t, err)
			}
			var wg sync.WaitGroup
			outs := make([][]runners.Outcome, len(rs))
			warm := make([]error, len(rs))
			for i, r := range rs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if warm[i] = r.Warmup(context.Background()); warm[i] == nil {
						outs[i] = r.Run(context.Background(), task)
					}
				}()
			}
			wg.Wait()
			for i, r := range rs {
				require.NoError(t, warm[i])
				require.NoError(t, outs[i][0].Err)
				require.Equal(t, want[0].Value, outs[i][0].Value)
				info := devInfo(t, r)
				require.True(t, info.Submesh)
				require.Equal(t, groups[i], info.DeviceIDs)
				require.Equal(t, ttnn.MeshCoord{Row: i}, info.Offset)
			}
			c, err := ttnn.Counts()
			require.NoError(t, err)
			require.Equal(t, uint64(1+len(rs)), c.Devices, "the parent and one submesh per worker")
			require.Equal(t, uint64(len(rs)), c.Traces, "each worker captured its own trace")

			require.ErrorIs(t, parent.Close(), ttnn.ErrBusy, "the workers hold submeshes")
			for _, r := range rs {
				require.NoError(t, r.Close())
			}
			c, err = ttnn.Counts()
			require.NoError(t, err)
			require.Equal(t, ttnn.LiveCounts{Devices: 1}, c)
		})
	}
}

// TestInProcessWithoutParent: in process without a shared parent there is no device; the
// runner keeps its time with Go sleeps and opens nothing.
func TestInProcessWithoutParent(t *testing.T) {
	require.NoError(t, ttnn.Init("sim"))
	reg := NewRegistry()
	s := processSettings(func(s *config.Settings) {
		s.WorkerIsolation = config.IsolationInProcess
		s.MockStepLatency = 10 * time.Millisecond
	})
	r, err := reg.New(catalogue.RunnerSDXL, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: s})
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Warmup(context.Background()))
	_, onDevice := r.(interface {
		DeviceInfo() (ttnn.DeviceInfo, bool)
	}).DeviceInfo()
	require.False(t, onDevice)
	start := time.Now()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 3, Seed: new(int64)}}})
	require.NoError(t, out[0].Err)
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "three 10 ms steps")
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, ttnn.LiveCounts{}, c)
}
