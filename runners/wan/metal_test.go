//go:build cgo && ttnn

package wan

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/childtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

// TestMetalPipelineRunner runs TestChildMetalPipelineRunner in a child process: the metal
// backend must be the first and only backend its process selects.
func TestMetalPipelineRunner(t *testing.T) {
	if _, ok := ttnn.FakeRuntime(); !ok {
		t.Skip("metal is linked against a real tt::runtime: this test runs over the fake (scripts/check-metal.sh)")
	}
	tokenizerModel(t) // skips (or fails under CI=true), before the child runs, without the goldens
	childtest.Run(t, "TestChildMetalPipelineRunner")
}

// TestChildMetalPipelineRunner: tt-wan2.2's worker on DEVICE_BACKEND=metal, as the registry
// builds it for a T3K and a Galaxy group, warms up (HEAD's 2-step clip) and renders a clip over
// the fake tt::runtime: the device opened with the catalogue's options on the group's chips,
// progress after every step, the experts' traces captured by the warm-up and replayed by the
// clip, everything freed at Close. The programs are the declared ones at a tiny clip size
// (t2v.ShrunkDeclarations: the fake fills outputs on the host); full-size loading and the
// declaration checks are runners/wan/t2v's metal test.
func TestChildMetalPipelineRunner(t *testing.T) {
	if os.Getenv(childtest.Env) != t.Name() {
		t.Skip("runs only as a child process (of TestMetalPipelineRunner)")
	}
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		t.Fatalf("the .ttnn fixtures need flatc and the SDK: %v", err)
	}
	t.Setenv("MOCK_DEVICES_COUNT", "32")
	require.NoError(t, ttnn.Init(config.BackendMetal))
	ctx := context.Background()
	reg := runners.NewRegistry()
	Register(reg)
	const frames, height, width = 9, 32, 48
	tiny := t2v.ShrunkDeclarations(programs.Lookup, frames, height, width, 32)
	for _, tc := range []struct {
		mesh   config.MeshShape
		prefix string
	}{{config.MeshShape{Rows: 2, Cols: 4}, t2v.Prefix480}, {config.MeshShape{Rows: 4, Cols: 8}, t2v.Prefix720}} {
		t.Run(tc.prefix, func(t *testing.T) {
			weights := metalWeights(t)
			require.NoError(t, ttnnfile.WriteDeclared(ctx, ttnnfile.SDKDir(), weights, t2v.ProgramNames(tc.prefix), tiny, ttnnfile.Fixture{
				Traced: func(name string) bool { return strings.Contains(name, "-transformer") }}))
			s := &config.Settings{DeviceBackend: config.BackendMetal, ModelWeightsPath: weights, WorkerIsolation: config.IsolationInProcess,
				TraceRegionSize: config.DefaultTraceRegionSize}
			n := tc.mesh.Rows * tc.mesh.Cols
			r, err := reg.New(catalogue.RunnerWan22, runners.WorkerSpec{WorkerID: "0", Devices: chips(n), Mesh: tc.mesh, Settings: s})
			require.NoError(t, err)
			pr, ok := r.(*PipelineRunner)
			require.True(t, ok, "%T", r)
			require.Equal(t, tc.prefix, pr.prefix)
			pr.decl = tiny // the declared programs at the tiny size the files were written at

			before, _ := ttnn.FakeRuntime()
			require.NoError(t, r.Warmup(ctx))
			warm, _ := ttnn.FakeRuntime()
			require.Equal(t, ttnn.MeshShape{Rows: tc.mesh.Rows, Cols: tc.mesh.Cols}, warm.LastMesh)
			require.Equal(t, chips(n), warm.LastDeviceIDs)
			require.Equal(t, uint64(32768), warm.LastL1Small)
			require.Equal(t, uint64(catalogue.DefaultTraceRegionSize), warm.LastTraceRegion)
			require.Equal(t, 1, warm.LastCQs)
			require.Equal(t, int(ttnn.Fabric1D), warm.LastFabric)
			require.Equal(t, t2v.TTNNStats{Encodes: 2, Runs: [3]int{0, 2, 2}, VAEs: 1}, pr.Stats(),
				"warm-up: 2 steps (t=999 high-noise, t=923 low-noise by tt-metal's 2-step rule), two runs each")
			require.Equal(t, uint64(2), warm.TracesCaptured-before.TracesCaptured, "the warm-up captured both experts' traces")
			require.Equal(t, uint64(2), warm.TracesReplayed-before.TracesReplayed)

			var seen []int
			res, err := runOne(ctx, r, &runners.VideoRequest{Prompt: "a red fox in snow", NegativePrompt: "static", Steps: 5, Seed: 3,
				Width: width, Height: height, Frames: frames}, func(done, total int) {
				require.Equal(t, 5, total)
				seen = append(seen, done)
			})
			require.NoError(t, err)
			require.Equal(t, []int{0, 1, 2, 3, 4, 5}, seen)
			require.Len(t, res.Frames, frames)
			require.Len(t, res.Frames[0], width*height*3)
			clip, _ := ttnn.FakeRuntime()
			require.Equal(t, uint64(2+10+1), clip.Submits-warm.Submits, "UMT5 twice, 5 steps of two expert runs, the VAE once")
			require.Zero(t, clip.TracesCaptured-warm.TracesCaptured)
			require.Equal(t, uint64(10), clip.TracesReplayed-warm.TracesReplayed, "every expert run of the clip replays its trace")
			require.Equal(t, 16, res.FPS)

			require.NoError(t, r.Close())
			after, _ := ttnn.FakeRuntime()
			require.Zero(t, after.DeviceBuffers, "no device buffer left")
			require.Zero(t, after.Traces, "the traces were released")
			require.Zero(t, after.MeshesOpen)
			require.Equal(t, before.BuffersLeakedAtClose, after.BuffersLeakedAtClose)
		})
	}
}
