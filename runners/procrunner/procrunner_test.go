//go:build cgo

package procrunner

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/simimage"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/simaudio"
)

// childEnv makes the test binary a worker process: "serve" runs Serve with the mock runner
// named by MODEL_RUNNER on the group in childGroupEnv; "exit" exits with status 3 at once.
const (
	childEnv      = "PROCRUNNER_TEST_CHILD"
	childGroupEnv = "PROCRUNNER_TEST_GROUP"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "exit":
		fmt.Fprintln(os.Stderr, "child: exiting at once")
		os.Exit(3)
	default:
		os.Exit(childMain())
	}
}

// childMain is the device-worker of these tests: the same steps as the server's subcommand.
func childMain() int {
	settings, err := config.Load(".", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	settings.WorkerIsolation = config.IsolationProcess
	group := os.Getenv(childGroupEnv)
	var spec *runners.WorkerSpec
	for _, g := range settings.DeviceGroups {
		if g.ID == group {
			spec = &runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Mesh: settings.DeviceMeshShape, Settings: settings}
		}
	}
	if spec == nil {
		fmt.Fprintf(os.Stderr, "child: no group %q in %v\n", group, settings.DeviceGroups)
		return 1
	}
	reg := families.NewRegistry()
	r, err := reg.New(settings.ModelRunner, *spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "child serving group %s (TT_VISIBLE_DEVICES=%s)\n", group, os.Getenv("TT_VISIBLE_DEVICES"))
	if err := Serve(context.Background(), r, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// logBuffer collects log output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fastLatency is the MOCK_* latency of the children (and of the in-process twins).
var fastLatency = map[string]string{
	"MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0.002", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.001",
	"MOCK_CNN_SECONDS": "0.001", "MOCK_DEVICES_COUNT": "2",
}

// newChild returns a runner for a test-binary worker with env on top of fastLatency.
func newChild(t *testing.T, env map[string]string, tweak func(*Config)) (*Runner, *logBuffer) {
	t.Helper()
	vars := map[string]string{childEnv: "serve", childGroupEnv: "0", "MODEL_RUNNER": catalogue.RunnerSDXL}
	for k, v := range fastLatency {
		vars[k] = v
	}
	for k, v := range env {
		vars[k] = v
	}
	group := vars[childGroupEnv]
	spec := runners.WorkerSpec{WorkerID: group}
	for _, d := range strings.Split(group, ",") {
		var id int
		_, err := fmt.Sscan(d, &id)
		require.NoError(t, err)
		spec.Devices = append(spec.Devices, id)
	}
	cfgEnv := WorkerEnv(spec, t.TempDir(), 0)
	for k, v := range vars {
		cfgEnv = append(cfgEnv, k+"="+v)
	}
	logs := &logBuffer{}
	cfg := Config{
		WorkerID:  group,
		Path:      os.Args[0],
		Args:      []string{"-test.run=^$"},
		Env:       cfgEnv,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		Grace:     300 * time.Millisecond,
		Heartbeat: 200 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	r := New(cfg)
	t.Cleanup(func() {
		_ = r.Close()
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	return r, logs
}

func warm(t *testing.T, r *Runner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, r.Warmup(ctx))
}

func seedPtr(v int64) *int64 { return &v }

func testImage() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{R: uint8(4 * x), G: uint8(5 * y), B: 90, A: 255})
		}
	}
	return img
}

func sineAudio(seconds float64) []float32 {
	out := make([]float32, int(seconds*16000))
	for i := range out {
		out[i] = float32(0.3 * math.Sin(float64(i)*2*math.Pi*440/16000))
	}
	return out
}

// TestSameResultsAsInProcess: through the child (and the simulator in it) a request gets the
// same result as from the in-process runner, streamed chunks included, and the child's stderr
// reaches the log tagged with the worker id.
func TestSameResultsAsInProcess(t *testing.T) {
	lat := simdev.Latency{}
	tests := []struct {
		name   string
		runner string
		local  runners.Runner
		req    runners.Request
		stream bool
	}{
		{"sdxl", catalogue.RunnerSDXL, simimage.New(catalogue.RunnerSDXL, 1024, lat),
			&runners.ImageRequest{Prompt: "a red fox", NumInferenceSteps: 4, Seed: seedPtr(7), GuidanceScale: 5}, false},
		{"whisper streaming", catalogue.RunnerWhisper, simaudio.New(lat),
			&runners.AudioRequest{Samples: sineAudio(2), SampleRate: 16000, Duration: 2,
				Segments: []runners.Span{{Start: 0.2, End: 1.5}}, Stream: true}, true},
		{"resnet", catalogue.RunnerResNet, resnet.NewSim(catalogue.RunnerResNet, lat),
			&runners.CNNRequest{Image: testImage(), TopK: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, logs := newChild(t, map[string]string{"MODEL_RUNNER": tt.runner}, nil)
			warm(t, r)
			require.Contains(t, logs.String(), "child serving group 0 (TT_VISIBLE_DEVICES=0)")
			require.Contains(t, logs.String(), "worker=0")

			collect := func() (*[]runners.Chunk, func(runners.Chunk) error) {
				var chunks []runners.Chunk
				return &chunks, func(c runners.Chunk) error { chunks = append(chunks, c); return nil }
			}
			remoteChunks, remoteEmit := collect()
			localChunks, localEmit := collect()
			remoteTask := runners.Task{Ctx: context.Background(), Request: tt.req}
			localTask := runners.Task{Ctx: context.Background(), Request: tt.req}
			if tt.stream {
				remoteTask.Emit, localTask.Emit = remoteEmit, localEmit
			}
			got := r.Run(context.Background(), []runners.Task{remoteTask})
			want := tt.local.Run(context.Background(), []runners.Task{localTask})
			require.NoError(t, got[0].Err)
			require.NoError(t, want[0].Err)
			if img, ok := want[0].Value.(*runners.ImageResult); ok {
				gimg := got[0].Value.(*runners.ImageResult)
				require.Len(t, gimg.Images, 1)
				require.Equal(t, img.Images[0].(*image.RGBA).Pix, gimg.Images[0].(*image.RGBA).Pix)
			} else {
				require.Equal(t, want[0].Value, got[0].Value)
			}
			require.Equal(t, *localChunks, *remoteChunks)
			if tt.stream {
				require.NotEmpty(t, *remoteChunks)
			}
			require.NoError(t, tt.local.Close())
		})
	}
}

// TestCancellationIsForwarded: a task whose context ends gets its cancel to the child, which
// stops at the next step; the child stays up for the next batch.
func TestCancellationIsForwarded(t *testing.T) {
	r, _ := newChild(t, map[string]string{"MOCK_STEP_SECONDS": "0.04"}, nil) // ~40 ms per UNet step
	warm(t, r)
	pid := r.PID()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	out := r.Run(context.Background(), []runners.Task{
		{Ctx: ctx, Request: &runners.ImageRequest{Prompt: "long", NumInferenceSteps: 500, Seed: seedPtr(1)}},
		{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "short", NumInferenceSteps: 2, Seed: seedPtr(1)}},
	})
	require.Less(t, time.Since(start), 8*time.Second, "500 steps would take ~20 s")
	require.ErrorIs(t, out[0].Err, context.Canceled)
	require.NotErrorIs(t, out[0].Err, runners.ErrDeviceLost)
	require.NoError(t, out[1].Err)

	out = r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "again", NumInferenceSteps: 2, Seed: seedPtr(2)}}})
	require.NoError(t, out[0].Err)
	require.Equal(t, pid, r.PID())
}

// TestChildAbort: the simulator abort()s the child mid-request: the job fails with
// ErrDeviceLost, quoting the child's last words, and so does every later Run.
func TestChildAbort(t *testing.T) {
	// Warm-up executes 4 programs (UNet and VAE compile runs, one step, the decode): the
	// 6th execution is the second step of the request.
	r, _ := newChild(t, map[string]string{"TTB_SIM_ABORT": "6"}, nil)
	warm(t, r)
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "boom", NumInferenceSteps: 5, Seed: seedPtr(1)}}})
	require.ErrorIs(t, out[0].Err, runners.ErrDeviceLost)
	require.ErrorIs(t, out[0].Err, ErrWorkerExited)
	require.ErrorContains(t, out[0].Err, "TTB_SIM_ABORT=6: aborting in sdxl-unet.forward")
	again := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1, Seed: seedPtr(1)}}})
	require.ErrorIs(t, again[0].Err, runners.ErrDeviceLost)
	require.NoError(t, r.Close())
}

// TestChildHang: a device call that never returns outlives the job's deadline; after the
// grace the child is killed and the job fails with a timeout that is also a lost device.
func TestChildHang(t *testing.T) {
	r, _ := newChild(t, map[string]string{"TTB_SIM_HANG_SECONDS": "30", "TTB_SIM_HANG_AFTER": "6"}, nil)
	warm(t, r)
	pid := r.PID()
	// The deadline leaves a loaded machine time to reach the hang (the second step) first.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	out := r.Run(context.Background(), []runners.Task{{Ctx: ctx,
		Request: &runners.ImageRequest{Prompt: "hang", NumInferenceSteps: 5, Seed: seedPtr(1)}}})
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 1300*time.Millisecond, "deadline 1 s + grace 300 ms")
	require.Less(t, took, 6*time.Second)
	require.ErrorIs(t, out[0].Err, runners.ErrDeviceLost)
	require.ErrorIs(t, out[0].Err, context.DeadlineExceeded)
	require.ErrorIs(t, out[0].Err, ErrHung)
	require.ErrorContains(t, out[0].Err, "signal: killed")
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the child is gone")
}

// TestMissedHeartbeats: a child that stops (SIGSTOP) is declared dead after 5 intervals.
// (The first Run after the stop must notice it; the stopped child cannot answer.)
func TestMissedHeartbeats(t *testing.T) {
	r, _ := newChild(t, nil, nil)
	warm(t, r)
	require.NoError(t, syscall.Kill(r.PID(), syscall.SIGSTOP))
	start := time.Now()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1, Seed: seedPtr(1)}}})
	require.Less(t, time.Since(start), 3*time.Second)
	require.ErrorIs(t, out[0].Err, runners.ErrDeviceLost)
	require.ErrorContains(t, out[0].Err, "no heartbeat for")
	require.ErrorContains(t, out[0].Err, "(5 missed)")
}

// TestWarmupFailures: start-up errors of the device reach the caller with the backend's
// message; a child that dies before "ready" is a lost device.
func TestWarmupFailures(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
		is   error
	}{
		{"mesh larger than the visible chips",
			map[string]string{"DEVICE_MESH_SHAPE": "(1,2)", childGroupEnv: "0,1", "TT_VISIBLE_DEVICES": "0"},
			[]string{"open device (mesh 1x2", "invalid argument", "needs 2 chips but only 1 are visible"}, nil},
		{"trace over the trace region",
			map[string]string{"TRACE_REGION_SIZE": "1000000"},
			[]string{"capture trace of sdxl-unet (trace_region_size 1000000)", "out of memory", "trace region"}, nil},
		{"child exits", map[string]string{childEnv: "exit"},
			[]string{"exit status 3", "child: exiting at once"}, runners.ErrDeviceLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newChild(t, tt.env, nil)
			err := r.Warmup(context.Background())
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.NoError(t, r.Close())
		})
	}
}

// TestCloseStopsTheChild: Close ends the child through shutdown; it is idempotent.
func TestCloseStopsTheChild(t *testing.T) {
	r, logs := newChild(t, nil, nil)
	require.NoError(t, New(Config{}).Close(), "close before start")
	warm(t, r)
	pid := r.PID()
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH)
	require.Contains(t, logs.String(), "worker process stopped")
	require.Error(t, r.Warmup(context.Background()), "no warm-up after close")
}

// TestWorkerEnv: the child's environment names its chips, cache, mesh, trace region and
// dispatch timeout.
func TestWorkerEnv(t *testing.T) {
	s := &config.Settings{TraceRegionSize: 1234, TraceRegionSizeSet: true}
	env := WorkerEnv(runners.WorkerSpec{WorkerID: "2,3", Devices: []int{2, 3}, Mesh: config.MeshShape{Rows: 1, Cols: 2}, Settings: s},
		"/cache", 92*time.Second)
	require.Equal(t, []string{"TT_VISIBLE_DEVICES=2,3", "TT_METAL_CACHE=/cache/group-2_3", "DEVICE_MESH_SHAPE=[1,2]",
		"TRACE_REGION_SIZE=1234", "TT_METAL_OPERATION_TIMEOUT_SECONDS=92"}, env)
	require.Equal(t, []string{"TT_METAL_CACHE=/c/group-all"}, WorkerEnv(runners.WorkerSpec{}, "/c", 0))
}

// TestHeadEnv: a Python worker's HEAD settings are written as HEAD's pydantic parses them, with
// the server's resolved values (a pool's own groups; no preset or mesh override applied twice).
func TestHeadEnv(t *testing.T) {
	s := &config.Settings{ModelRunner: "tt-sdxl-trace", DeviceIDs: "(0),(1)", DeviceMeshShape: config.MeshShape{Rows: 2, Cols: 4},
		SDXLResolution: 512, InferenceTimeout: 1500 * time.Millisecond, NewDeviceDelay: 30 * time.Second,
		ResetDeviceSleep: 250 * time.Millisecond, IsGalaxy: true, MaxQueueSize: 17,
		Pools: []config.Pool{{Runner: "tt-whisper", Service: "audio", Groups: []config.DeviceGroup{{ID: "4,5"}, {ID: "6"}}}}}
	tests := []struct {
		name, runner string
		want         []string
	}{
		{"single pool", "tt-sdxl-trace", []string{"MODEL=", "TP2=false", "SD_3_5_BASE=false", "SD_3_5_FAST=false",
			"SP_MESH_4X32=false", "DEVICE_MESH_SHAPE=[2,4]", "SDXL_IMAGE_RESOLUTION=[512,512]",
			"REQUEST_PROCESSING_TIMEOUT_SECONDS=2", "NEW_DEVICE_DELAY_SECONDS=30", "RESET_DEVICE_SLEEP_TIME=0.25",
			"IS_GALAXY=true", "MAX_QUEUE_SIZE=17", "MODEL_RUNNER=tt-sdxl-trace", "MODEL_SERVICE=image", "DEVICE_IDS=(0),(1)"}},
		{"a MODEL_POOLS pool", "tt-whisper", []string{"MODEL_RUNNER=tt-whisper", "MODEL_SERVICE=audio", "DEVICE_IDS=(4,5),(6)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := HeadEnv(s, tt.runner)
			for _, w := range tt.want {
				require.Contains(t, env, w)
			}
			seen := map[string]bool{}
			for _, kv := range env {
				k, _, _ := strings.Cut(kv, "=")
				require.False(t, seen[k], "%s given twice", k)
				seen[k] = true
			}
		})
	}
}
