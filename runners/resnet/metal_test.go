//go:build cgo && ttnn

package resnet

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/childtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

// TestMetalResNet runs TestChildMetalResNet in a child process: the metal backend must be the
// first and only backend its process selects.
func TestMetalResNet(t *testing.T) {
	if _, ok := ttnn.FakeRuntime(); !ok {
		t.Skip("metal is linked against a real tt::runtime: this test runs over the fake (scripts/check-metal.sh)")
	}
	childtest.Run(t, "TestChildMetalResNet")
}

// writeResNet writes MODEL_WEIGHTS_PATH/resnet50.ttnn from the declaration, changed by mod.
func writeResNet(t *testing.T, mod func(*ttnn.ProgramSpec)) string {
	t.Helper()
	dir := t.TempDir()
	f := ttnnfile.Fixture{Traced: func(string) bool { return true }} // tt-mlir's trace pass: capture on the first run
	if mod != nil {
		f.Mod = func(_ string, s *ttnn.ProgramSpec) { mod(s) }
	}
	require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, []string{SimProgram}, programs.Lookup, f))
	return dir
}

func TestChildMetalResNet(t *testing.T) {
	if os.Getenv(childtest.Env) != t.Name() {
		t.Skip("runs only as a child process (of TestMetalResNet)")
	}
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		t.Fatalf("the .ttnn fixtures need flatc and the SDK: %v", err)
	}
	ctx := context.Background()
	reg := runners.NewRegistry()
	Register(reg)
	worker := func(weights string) runners.Runner {
		s := &config.Settings{DeviceBackend: config.BackendMetal, ModelWeightsPath: weights, WorkerIsolation: config.IsolationProcess}
		r, err := reg.New(catalogue.RunnerResNet, runners.WorkerSpec{Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: s})
		require.NoError(t, err)
		require.NotNil(t, r.(*cnnRunner).metal, "DEVICE_BACKEND=metal: the metal device")
		return r
	}

	// No resnet50.ttnn: the factory says where it looked.
	_, err := reg.New(catalogue.RunnerResNet, runners.WorkerSpec{Settings: &config.Settings{DeviceBackend: config.BackendMetal, ModelWeightsPath: t.TempDir()}})
	require.ErrorContains(t, err, "MODEL_WEIGHTS_PATH has no resnet50.ttnn")

	// A program compiled for batch 8: start-up stops with one line naming the difference.
	bad := worker(writeResNet(t, func(s *ttnn.ProgramSpec) { s.Functions[0].Inputs[0].Shape[0] = 8 }))
	err = bad.Warmup(ctx)
	require.ErrorIs(t, err, ttnn.ErrContract)
	require.ErrorIs(t, err, runners.ErrConfig, "the worker fails at once instead of retrying")
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), "program resnet50 (")
	require.Contains(t, err.Error(), "function forward: input 0 (pixel_values): shape [8,3,224,224] in the file, [16,3,224,224] declared")
	t.Logf("mismatching fixture: %v", err)
	require.NoError(t, bad.Close())

	// A float32 output where logits are declared f32 but the file says bf16.
	bad = worker(writeResNet(t, func(s *ttnn.ProgramSpec) {
		s.Functions[0].Outputs = []ttnn.TensorSpec{{TensorDesc: ttnn.TensorDesc{DType: ttnn.BF16, Shape: []int{16, 1000}}}}
	}))
	require.ErrorContains(t, bad.Warmup(ctx), "output 0 (logits): dtype bf16 in the file, f32 declared")
	require.NoError(t, bad.Close())

	// The declared program: the runner warms up and serves; the outputs are the fake's.
	before, _ := ttnn.FakeRuntime()
	r := worker(writeResNet(t, nil))
	require.NoError(t, r.Warmup(ctx))
	info, ok := r.(*cnnRunner).DeviceInfo()
	require.True(t, ok)
	require.Equal(t, "metal", info.Backend)
	imgs := testImages()
	var tasks []runners.Task
	for _, name := range []string{"red", "checker", "red"} {
		tasks = append(tasks, runners.Task{Ctx: ctx, Request: &runners.CNNRequest{Image: imgs[name], TopK: 3}})
	}
	serve := func() []int {
		outs := r.Run(ctx, tasks)
		require.Len(t, outs, 3)
		var top []int
		for _, o := range outs {
			require.NoError(t, o.Err)
			res, ok := o.Value.(*runners.CNNResult)
			require.True(t, ok, "%T", o.Value)
			require.Len(t, res.Top, 3)
			top = append(top, res.Top[0].Index)
		}
		return top
	}
	first := serve()
	// The fake's logits are a hash of the program and the whole input batch, not a model's: the
	// same batch gives the same answer.
	require.Equal(t, first, serve())
	t.Logf("served on metal over the fake runtime: top-1 classes %v (the fake's outputs)", first)
	mid, _ := ttnn.FakeRuntime()
	require.Equal(t, before.TracesCaptured+1, mid.TracesCaptured, "compile run captured the trace")
	require.Greater(t, mid.TracesReplayed, before.TracesReplayed, "serving replays it")
	require.NoError(t, r.Close())
	after, _ := ttnn.FakeRuntime()
	require.Zero(t, after.DeviceBuffers, "no device buffer left")
	require.Zero(t, after.Traces, "the trace was released")
	require.Zero(t, after.MeshesOpen)
	require.Equal(t, before.BuffersLeakedAtClose, after.BuffersLeakedAtClose)
}
