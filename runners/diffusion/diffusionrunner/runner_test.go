//go:build cgo

package diffusionrunner

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/simtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestMain(m *testing.M) {
	simtest.Setup(2, "0.001")
	goleak.VerifyTestMain(m)
}

// bytesToUnicode is GPT-2's byte-to-symbol table, which CLIP's vocabulary uses.
func bytesToUnicode() []string {
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
	}
	var order []int
	for b := range 256 {
		if printable(b) {
			order = append(order, b)
		}
	}
	for b := range 256 {
		if !printable(b) {
			order = append(order, b)
		}
	}
	syms := make([]string, 0, 256)
	n := 0
	for _, b := range order {
		r := rune(b)
		if !printable(b) {
			r = rune(256 + n)
			n++
		}
		syms = append(syms, string(r))
	}
	return syms
}

// writeTinyWeights writes a tiny CLIP tokenizer in Hugging Face layout (tokenizer/vocab.json
// and merges.txt: the 512 byte symbols, a few merges, the special tokens) and returns the
// weights directory.
func writeTinyWeights(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	merges := []string{"t h", "th e</w>", "a n", "an t</w>", "m an</w>", "r e", "re d</w>"}
	var vocab []string
	syms := bytesToUnicode()
	vocab = append(vocab, syms...)
	for _, s := range syms {
		vocab = append(vocab, s+"</w>")
	}
	for _, m := range merges {
		vocab = append(vocab, strings.ReplaceAll(m, " ", ""))
	}
	vocab = append(vocab, "<|startoftext|>", "<|endoftext|>")
	enc := map[string]int{}
	for i, v := range vocab {
		enc[v] = i
	}
	b, err := json.Marshal(enc)
	require.NoError(t, err)
	tdir := filepath.Join(dir, "tokenizer")
	require.NoError(t, os.MkdirAll(tdir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tdir, "vocab.json"), b, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(tdir, "merges.txt"),
		[]byte("#version: 0.2\n"+strings.Join(merges, "\n")+"\n"), 0o600))
	return dir
}

// testConfig is a runner configuration on the pipeline's test-size programs.
func testConfig(t *testing.T, m Model, weights string) Config {
	t.Helper()
	dir := "../diffusionpipeline/testdata/small"
	if m == SD35 {
		dir = "../diffusionpipeline/testdata/small35"
	}
	return Config{Model: m, Setup: Setup{WeightsDir: weights, Backend: "sim", Programs: os.DirFS(dir),
		Device: DeviceOptions(m, ttnn.MeshShape{Rows: 1, Cols: 1}, 0)}}
}

func warmRunner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	r, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Equal(t, ttnn.LiveCounts{}, c, "Close releases the device and everything on it")
	})
	require.NoError(t, r.Warmup(context.Background()))
	return r
}

func seed(v int64) *int64 { return &v }

// recorder collects a task's progress and previews.
type recorder struct {
	mu       sync.Mutex
	progress [][2]int
	partials []*runners.ImagePartial
	emitErr  error
}

func (rec *recorder) task(ctx context.Context, req *runners.ImageRequest, stream bool) runners.Task {
	t := runners.Task{Ctx: ctx, Request: req, Progress: func(done, total int) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.progress = append(rec.progress, [2]int{done, total})
	}}
	if stream {
		t.Emit = func(chunk runners.Chunk) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.partials = append(rec.partials, chunk.(*runners.ImagePartial))
			return rec.emitErr
		}
	}
	return t
}

func image0(t *testing.T, o runners.Outcome) image.Image {
	t.Helper()
	require.NoError(t, o.Err)
	res, ok := o.Value.(*runners.ImageResult)
	require.True(t, ok, "value is %T", o.Value)
	require.Len(t, res.Images, 1)
	return res.Images[0]
}

func pix(t *testing.T, img image.Image) []byte {
	t.Helper()
	n, ok := img.(*image.NRGBA)
	require.True(t, ok, "image is %T", img)
	return n.Pix
}

func TestRunnerEndToEnd(t *testing.T) {
	weights := writeTinyWeights(t)
	for _, m := range []Model{SDXL, SD35} {
		t.Run(m.String(), func(t *testing.T) {
			r := warmRunner(t, testConfig(t, m, weights))
			ctx := context.Background()
			var a, b recorder
			reqA := &runners.ImageRequest{Prompt: "the man", NumInferenceSteps: 6, GuidanceScale: 5, Seed: seed(3), PartialImages: 2}
			reqB := &runners.ImageRequest{Prompt: "the red ant", NumInferenceSteps: 3, GuidanceScale: 5, Seed: seed(3)}
			out := r.Run(ctx, []runners.Task{a.task(ctx, reqA, true), b.task(ctx, reqB, false)})
			require.Len(t, out, 2)
			imgA, imgB := image0(t, out[0]), image0(t, out[1])
			require.Equal(t, image.Rect(0, 0, 64, 64), imgA.Bounds())
			require.NotEqual(t, pix(t, imgA), pix(t, imgB), "the prompt reaches the image")
			require.Equal(t, [][2]int{{1, 6}, {2, 6}, {3, 6}, {4, 6}, {5, 6}, {6, 6}}, a.progress)
			require.Equal(t, [][2]int{{1, 3}, {2, 3}, {3, 3}}, b.progress)
			require.Len(t, a.partials, 2, "partial_images previews")
			for i, p := range a.partials {
				require.Equal(t, i, p.Index)
				require.Equal(t, []int{2, 4}[i], p.Step)
				require.Equal(t, 6, p.Steps)
				require.Equal(t, image.Rect(0, 0, 16, 16), p.Image.Bounds(), "latent preview at twice the latent size")
			}
			require.NotEqual(t, pix(t, a.partials[0].Image), pix(t, a.partials[1].Image), "previews follow the denoising")
			require.Empty(t, b.partials)

			// Same request, same image.
			again := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: reqB}})
			require.Equal(t, pix(t, imgB), pix(t, image0(t, again[0])))
		})
	}
}

func TestRunnerSD35Semantics(t *testing.T) {
	r := warmRunner(t, testConfig(t, SD35, writeTinyWeights(t)))
	ctx := context.Background()
	run := func(req *runners.ImageRequest) []byte {
		return pix(t, image0(t, r.Run(ctx, []runners.Task{{Ctx: ctx, Request: req}})[0]))
	}
	req := func(change func(*runners.ImageRequest)) *runners.ImageRequest {
		r := &runners.ImageRequest{Prompt: "the man", NumInferenceSteps: 2, Seed: seed(0)}
		if change != nil {
			change(r)
		}
		return r
	}
	base := run(req(nil))
	require.Equal(t, base, run(req(func(r *runners.ImageRequest) { r.Seed = nil })), "as the Python runner: a missing seed is 0")
	require.Equal(t, base, run(req(func(r *runners.ImageRequest) { r.GuidanceScale = 3.5 })), "no guidance_scale is SD3.5's 3.5")
	for name, change := range map[string]func(*runners.ImageRequest){
		"negative_prompt":        func(r *runners.ImageRequest) { r.NegativePrompt = "red" },
		"guidance_scale 5":       func(r *runners.ImageRequest) { r.GuidanceScale = 5 },
		"guidance_scale 1":       func(r *runners.ImageRequest) { r.GuidanceScale = 1 }, // no CFG: one transformer row
		"prompt_2":               func(r *runners.ImageRequest) { r.Prompt2 = "an ant" },
		"negative_prompt_2":      func(r *runners.ImageRequest) { r.NegativePrompt2 = "red" },
		"sigmas (same count)":    func(r *runners.ImageRequest) { r.Sigmas = []float64{1, 0.3} },
		"timesteps (same count)": func(r *runners.ImageRequest) { r.Timesteps = []float64{999, 300} },
	} {
		require.NotEqualf(t, base, run(req(change)), "%s is used", name)
	}
	// A custom schedule sets the number of transformer steps.
	var rec recorder
	out := r.Run(ctx, []runners.Task{rec.task(ctx, req(func(r *runners.ImageRequest) { r.Sigmas = []float64{1, 0.6, 0.3} }), false)})
	image0(t, out[0])
	require.Equal(t, [][2]int{{1, 3}, {2, 3}, {3, 3}}, rec.progress)
	both := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: req(func(r *runners.ImageRequest) {
		r.Sigmas, r.Timesteps = []float64{1, 0.5}, []float64{999, 500}
	})}})
	require.ErrorIs(t, both[0].Err, runners.ErrBadRequest)
}

func TestRunnerCancel(t *testing.T) {
	r := warmRunner(t, testConfig(t, SDXL, writeTinyWeights(t)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var steps []int
	task := runners.Task{Ctx: ctx, Request: &runners.ImageRequest{Prompt: "the", NumInferenceSteps: 10, GuidanceScale: 5, Seed: seed(1)},
		Progress: func(done, _ int) {
			steps = append(steps, done)
			if done == 3 {
				cancel()
			}
		}}
	other := runners.Task{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "the", NumInferenceSteps: 2, GuidanceScale: 5}}
	out := r.Run(context.Background(), []runners.Task{task, other})
	require.ErrorIs(t, out[0].Err, context.Canceled)
	require.Equal(t, []int{1, 2, 3}, steps, "stops within one step of the cancel")
	image0(t, out[1])

	// The batch context ends every task.
	bctx, bcancel := context.WithCancel(context.Background())
	bcancel()
	out = r.Run(bctx, []runners.Task{other})
	require.ErrorIs(t, out[0].Err, context.Canceled)
}

// lateContext has ended, but what context.AfterFunc registers on it never runs: the moment, on
// a loaded machine, before the goroutine AfterFunc starts is scheduled (a test double; a real
// context's Done is closed by then).
type lateContext struct{ context.Context }

func (lateContext) Err() error { return context.Canceled }

// A batch context that has already ended ends every task before its first step, however late
// AfterFunc's goroutine runs: under load the whole image was made (the intermittent failure of
// TestRunnerCancel's last check).
func TestRunnerEndedBatchRunsNoStep(t *testing.T) {
	r := warmRunner(t, testConfig(t, SDXL, writeTinyWeights(t)))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for i, bctx := range []context.Context{lateContext{context.Background()}, ended, ended, ended} {
		steps := 0
		task := runners.Task{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "the", NumInferenceSteps: 2, GuidanceScale: 5},
			Progress: func(int, int) { steps++ }}
		out := r.Run(bctx, []runners.Task{task})
		require.ErrorIs(t, out[0].Err, context.Canceled, "run %d", i)
		require.Zero(t, steps, "run %d: a step ran after the batch context ended", i)
	}
}

func TestRunnerEmitFailure(t *testing.T) {
	r := warmRunner(t, testConfig(t, SDXL, writeTinyWeights(t)))
	req := &runners.ImageRequest{Prompt: "the", NumInferenceSteps: 8, GuidanceScale: 5, Seed: seed(1), PartialImages: 3}

	// A transport that cannot carry previews: the image is still made, without more previews.
	rec := recorder{emitErr: errors.New("no previews here")}
	out := r.Run(context.Background(), []runners.Task{rec.task(context.Background(), req, true)})
	image0(t, out[0])
	require.Len(t, rec.partials, 1)

	// A client that went away: the task stops.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := runners.Task{Ctx: ctx, Request: req, Emit: func(runners.Chunk) error { cancel(); return errors.New("client gone") }}
	out = r.Run(context.Background(), []runners.Task{gone})
	require.ErrorIs(t, out[0].Err, context.Canceled)
}

func TestRunnerLifecycle(t *testing.T) {
	r, err := New(testConfig(t, SDXL, writeTinyWeights(t)))
	require.NoError(t, err)
	task := runners.Task{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "a", NumInferenceSteps: 1}}
	require.ErrorIs(t, r.Run(context.Background(), []runners.Task{task})[0].Err, ErrNotWarm)
	require.NoError(t, r.Warmup(context.Background()))
	bad := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.CNNRequest{}}})
	require.ErrorContains(t, bad[0].Err, "not *runners.ImageRequest")
	both := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "a", GuidanceScale: 5, Timesteps: []float64{999}, Sigmas: []float64{1, 0}}}})
	require.ErrorIs(t, both[0].Err, runners.ErrBadRequest)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close is idempotent")
	require.ErrorIs(t, r.Run(context.Background(), []runners.Task{task})[0].Err, ErrClosed)
	require.ErrorIs(t, r.Warmup(context.Background()), ErrClosed)
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, ttnn.LiveCounts{}, c)
}

func TestRunnerWarmupFailureFreesDevice(t *testing.T) {
	cfg := testConfig(t, SDXL, writeTinyWeights(t))
	cfg.Programs = os.DirFS(t.TempDir()) // no programs
	r, err := New(cfg)
	require.NoError(t, err)
	err = r.Warmup(context.Background())
	require.ErrorContains(t, err, "sdxl-text-encoder")
	c, cerr := ttnn.Counts()
	require.NoError(t, cerr)
	require.Equal(t, ttnn.LiveCounts{}, c, "a failed warm-up closes the device")
	require.NoError(t, r.Close())
}

func TestNoTokenizer(t *testing.T) {
	_, err := New(Config{Model: SDXL, Setup: Setup{WeightsDir: t.TempDir()}})
	require.ErrorIs(t, err, ErrNoTokenizer)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tokenizer"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer", "vocab.json"), []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer", "merges.txt"), []byte(""), 0o600))
	_, err = New(Config{Model: SDXL, Setup: Setup{WeightsDir: dir}})
	require.ErrorIs(t, err, clip.ErrBadVocab, "a broken tokenizer is an error, not a fallback")
}

// repoRoot is the module root (this file is runners/diffusion/diffusionrunner/runner_test.go).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// TestRealCLIPVocab runs the SDXL runner with the real CLIP vocabulary
// (../shared/testdata/clip, linked into a weights directory) and checks its tokenization
// against the golden SDXL inputs.
func TestRealCLIPVocab(t *testing.T) {
	shared := filepath.Join(repoRoot(t), "..", "shared", "testdata", "clip")
	bpe := filepath.Join(shared, bpeFile)
	if _, err := os.Stat(bpe); err != nil {
		t.Skipf("real CLIP vocabulary not present (%v); it lives in ../shared/testdata/clip next to the repository", err)
	}
	weights := t.TempDir()
	require.NoError(t, os.Symlink(bpe, filepath.Join(weights, bpeFile)))
	r := warmRunner(t, testConfig(t, SDXL, weights))

	b, err := os.ReadFile(filepath.Join(shared, "tokenize_golden.json"))
	require.NoError(t, err)
	var golden struct {
		Cases []struct {
			Prompt string `json:"prompt"`
			IDs1   []int  `json:"sdxl_tokenizer_1_clip_l_input_ids"`
			IDs2   []int  `json:"sdxl_tokenizer_2_clip_g_input_ids"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &golden))
	require.NotEmpty(t, golden.Cases)
	for _, c := range golden.Cases[:min(5, len(golden.Cases))] {
		require.Len(t, c.IDs1, clip.ContextLength)
		in := r.tok.clip.SDXL(c.Prompt, c.Prompt)
		require.Equal(t, c.IDs1, in.Encoder1.IDs, c.Prompt)
		require.Equal(t, c.IDs2, in.Encoder2.IDs, c.Prompt)
	}
	ctx := context.Background()
	img := image0(t, r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.ImageRequest{Prompt: golden.Cases[0].Prompt,
		NumInferenceSteps: 2, GuidanceScale: 5, Seed: seed(0)}}})[0])
	require.Equal(t, 64, img.Bounds().Dx())
}

func TestRegisterFallback(t *testing.T) {
	weights := writeTinyWeights(t)
	group := func(ids ...string) []config.DeviceGroup {
		var gs []config.DeviceGroup
		for i, id := range ids {
			gs = append(gs, config.DeviceGroup{ID: id, Devices: []int{i}})
		}
		return gs
	}
	tests := []struct {
		name     string
		settings config.Settings
		real     bool
	}{
		{"no weights path", config.Settings{Mock: true, DeviceGroups: group("0")}, false},
		{"no tokenizer in weights", config.Settings{Mock: true, ModelWeightsPath: t.TempDir(), DeviceGroups: group("0")}, false},
		{"HF repo id as weights path", config.Settings{Mock: true, ModelWeightsPath: "stabilityai/stable-diffusion-xl-base-1.0", DeviceGroups: group("0")}, false},
		{"one in-process group", config.Settings{Mock: true, ModelWeightsPath: weights, WorkerIsolation: config.IsolationInProcess,
			DeviceGroups: group("0")}, true},
		{"several in-process groups", config.Settings{Mock: true, ModelWeightsPath: weights, WorkerIsolation: config.IsolationInProcess,
			DeviceGroups: group("0", "1")}, false},
		{"worker process", config.Settings{Mock: true, ModelWeightsPath: weights, WorkerIsolation: config.IsolationProcess,
			DeviceGroups: group("0", "1")}, true},
		{"hardware build", config.Settings{Mock: false, ModelWeightsPath: weights, DeviceGroups: group("0")}, false},
	}
	reg := runners.NewRegistry()
	Register(reg)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{catalogue.RunnerSDXL, catalogue.RunnerSD35} {
				svc, err := reg.Service(name)
				require.NoError(t, err)
				require.Equal(t, runners.ServiceImage, svc)
				s := tc.settings
				s.NumInferenceSteps = 20
				r, err := reg.New(name, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: &s})
				require.NoError(t, err)
				_, isReal := r.(*Runner)
				require.Equal(t, tc.real, isReal, "%s: runner %T", name, r)
				require.NoError(t, r.Close())
			}
		})
	}
}

// TestFallbackGeneratesOnFreshMachine: without model files the registered factory's runner
// (the mock image runner) still generates images.
func TestFallbackGeneratesOnFreshMachine(t *testing.T) {
	reg := runners.NewRegistry()
	Register(reg)
	s := config.Settings{Mock: true, NumInferenceSteps: 2, MockStepLatency: time.Millisecond,
		WorkerIsolation: config.IsolationInProcess, DeviceGroups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}}}
	r, err := reg.New(catalogue.RunnerSDXL, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Settings: &s})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.Warmup(context.Background()))
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.ImageRequest{Prompt: "a cat", NumInferenceSteps: 2, GuidanceScale: 5}}})
	require.Equal(t, image.Rect(0, 0, 1024, 1024), image0(t, out[0]).Bounds())
}

func TestDeviceOptions(t *testing.T) {
	one, t3k, tp2 := ttnn.MeshShape{Rows: 1, Cols: 1}, ttnn.MeshShape{Rows: 2, Cols: 4}, ttnn.MeshShape{Rows: 2, Cols: 1}
	base := ttnn.Options{CommandQueues: 1, ProgramCache: true, L1SmallSize: 32768}
	with := func(mesh ttnn.MeshShape, trace uint64, fabric ttnn.Fabric) ttnn.Options {
		o := base
		o.Mesh, o.TraceRegionSize, o.Fabric = mesh, trace, fabric
		return o
	}
	tests := []struct {
		name  string
		model Model
		mesh  ttnn.MeshShape
		trace int
		want  ttnn.Options
	}{
		{"sdxl n150", SDXL, one, 0, with(one, config.DefaultTraceRegionSize, ttnn.FabricOff)},
		{"sdxl tp2", SDXL, tp2, 0, with(tp2, config.DefaultTraceRegionSize, ttnn.FabricOff)},
		{"sdxl custom trace", SDXL, one, 1 << 20, with(one, 1<<20, ttnn.FabricOff)},
		{"sd3.5 t3k", SD35, t3k, 0, with(t3k, 25_000_000, ttnn.Fabric1D)},
		{"sd3.5 galaxy", SD35, ttnn.MeshShape{Rows: 4, Cols: 8}, 0, with(ttnn.MeshShape{Rows: 4, Cols: 8}, 25_000_000, ttnn.Fabric1D)},
		{"sd3.5 custom trace", SD35, t3k, 50_000_000, with(t3k, 50_000_000, ttnn.Fabric1D)},
		{"sd3.5 one chip", SD35, one, 0, with(one, 25_000_000, ttnn.FabricOff)},
		{"no mesh", SDXL, ttnn.MeshShape{}, 0, with(one, config.DefaultTraceRegionSize, ttnn.FabricOff)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, DeviceOptions(tc.model, tc.mesh, tc.trace))
		})
	}
}

func TestCFGSplitShapes(t *testing.T) {
	tests := []struct {
		mesh ttnn.MeshShape
		half ttnn.MeshShape
		offs []ttnn.MeshCoord
		ok   bool
	}{
		{ttnn.MeshShape{Rows: 1, Cols: 1}, ttnn.MeshShape{}, nil, false},
		{ttnn.MeshShape{Rows: 2, Cols: 1}, ttnn.MeshShape{Rows: 1, Cols: 1}, []ttnn.MeshCoord{{Row: 0, Col: 0}, {Row: 1, Col: 0}}, true},
		{ttnn.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshShape{Rows: 1, Cols: 1}, []ttnn.MeshCoord{{Row: 0, Col: 0}, {Row: 0, Col: 1}}, true},
		{ttnn.MeshShape{Rows: 2, Cols: 4}, ttnn.MeshShape{Rows: 2, Cols: 2}, []ttnn.MeshCoord{{Row: 0, Col: 0}, {Row: 0, Col: 2}}, true},
		{ttnn.MeshShape{Rows: 4, Cols: 8}, ttnn.MeshShape{Rows: 4, Cols: 4}, []ttnn.MeshCoord{{Row: 0, Col: 0}, {Row: 0, Col: 4}}, true},
		{ttnn.MeshShape{Rows: 1, Cols: 3}, ttnn.MeshShape{}, nil, false},
	}
	for _, tc := range tests {
		half, offs, ok := cfgSplit(tc.mesh)
		require.Equal(t, tc.ok, ok, "%v", tc.mesh)
		require.Equal(t, tc.half, half, "%v", tc.mesh)
		require.Equal(t, tc.offs, offs, "%v", tc.mesh)
	}
}

// TestRunnerCFGSplitOnSim runs both models on a 2-chip mesh: each guidance half replays its
// own denoiser trace on its own submesh; encoders and VAE run on the first.
func TestRunnerCFGSplitOnSim(t *testing.T) {
	weights := writeTinyWeights(t)
	for _, tc := range []struct {
		model Model
		mesh  ttnn.MeshShape
	}{{SDXL, ttnn.MeshShape{Rows: 2, Cols: 1}}, {SD35, ttnn.MeshShape{Rows: 1, Cols: 2}}} {
		t.Run(tc.model.String(), func(t *testing.T) {
			cfg := testConfig(t, tc.model, weights)
			cfg.Device = DeviceOptions(tc.model, tc.mesh, 0)
			r := warmRunner(t, cfg)
			require.Len(t, r.subs, 2)
			require.Len(t, r.closers, 2)
			stats := func(i int) diffusionpipeline.Stats {
				d, ok := r.closers[i].(interface {
					Stats() diffusionpipeline.Stats
				})
				require.True(t, ok, "device %T has no stats", r.closers[i])
				return d.Stats()
			}
			before0, before1 := stats(0), stats(1)
			ctx := context.Background()
			var rec recorder
			out := r.Run(ctx, []runners.Task{rec.task(ctx, &runners.ImageRequest{Prompt: "the man", NumInferenceSteps: 5,
				GuidanceScale: 5, Seed: seed(1)}, false)})
			require.Equal(t, image.Rect(0, 0, 64, 64), image0(t, out[0]).Bounds())
			after0, after1 := stats(0), stats(1)
			require.Equal(t, diffusionpipeline.Stats{Encodes: 1, TraceReplays: 5, VAEDecodes: 1}, diff(after0, before0),
				"first submesh: encoders, unconditional halves, VAE")
			require.Equal(t, diffusionpipeline.Stats{TraceReplays: 5}, diff(after1, before1), "second submesh: conditional halves only")
			require.Equal(t, 1, after0.TraceCaptures, "captured once, at warm-up")
			require.Equal(t, 1, after1.TraceCaptures)
			require.Len(t, rec.progress, 5)
		})
	}
}

// diff is a-b for the per-request counts.
func diff(a, b diffusionpipeline.Stats) diffusionpipeline.Stats {
	return diffusionpipeline.Stats{Encodes: a.Encodes - b.Encodes, TraceReplays: a.TraceReplays - b.TraceReplays, VAEDecodes: a.VAEDecodes - b.VAEDecodes}
}

// TestRunnersUnderSharedParent: in process, two device groups each open their chip's submesh
// of the server's shared parent mesh and generate at the same time.
func TestRunnersUnderSharedParent(t *testing.T) {
	weights := writeTinyWeights(t)
	popts := DeviceOptions(SDXL, ttnn.MeshShape{Rows: 1, Cols: 2}, 0)
	popts.DeviceIDs = []int{0, 1}
	parent, err := ttnn.OpenParent(context.Background(), popts)
	require.NoError(t, err)
	defer func() {
		require.NoError(t, parent.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Equal(t, ttnn.LiveCounts{}, c)
	}()

	// The factory now gives each in-process group the real pipeline.
	reg := runners.NewRegistry()
	Register(reg)
	s := config.Settings{Mock: true, ModelWeightsPath: weights, WorkerIsolation: config.IsolationInProcess,
		DeviceGroups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}, {ID: "1", Devices: []int{1}}}}
	fr, err := reg.New(catalogue.RunnerSDXL, runners.WorkerSpec{WorkerID: "1", Devices: []int{1}, Settings: &s, Parent: parent})
	require.NoError(t, err)
	require.IsType(t, &Runner{}, fr)
	require.NoError(t, fr.Close())

	rs := make([]*Runner, 2)
	for i := range rs {
		cfg := testConfig(t, SDXL, weights)
		cfg.Devices, cfg.Parent = []int{i}, parent
		rs[i], err = New(cfg)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	outs := make([][]runners.Outcome, 2)
	warm := make([]error, 2)
	for i, r := range rs {
		wg.Go(func() {
			if warm[i] = r.Warmup(context.Background()); warm[i] != nil {
				return
			}
			outs[i] = r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
				Request: &runners.ImageRequest{Prompt: "the man", NumInferenceSteps: 3, GuidanceScale: 5, Seed: seed(2)}}})
		})
	}
	wg.Wait()
	for i := range rs {
		require.NoError(t, warm[i])
		require.True(t, rs[i].dev.Info().Submesh, "group %d opened a submesh of the parent", i)
	}
	require.Equal(t, pix(t, image0(t, outs[0][0])), pix(t, image0(t, outs[1][0])), "same request, same image on either chip")
	for _, r := range rs {
		require.NoError(t, r.Close())
	}
}

// TestRegisterBringsItsFallback: the family registers its simulated runner with its models,
// the fallback when MODEL_WEIGHTS_PATH is not set and what MODEL_RUNNER=mock runs.
func TestRegisterBringsItsFallback(t *testing.T) {
	reg := runners.NewRegistry()
	Register(reg)
	want := []string{catalogue.RunnerMock} // and every image model of the catalogue
	for _, m := range catalogue.Models() {
		if m.Service == catalogue.ServiceImage {
			want = append(want, m.Name)
		}
	}
	require.ElementsMatch(t, want, reg.Names())
	require.Subset(t, reg.Names(), []string{catalogue.RunnerSD35, catalogue.RunnerSDXLEdit, catalogue.RunnerSDXLImg2Img, catalogue.RunnerSDXL})
	for _, name := range []string{catalogue.RunnerSDXL, catalogue.RunnerMock} {
		r, err := reg.New(name, runners.WorkerSpec{Settings: &config.Settings{Mock: true, ModelService: "image"}})
		require.NoError(t, err)
		_, isReal := r.(*Runner)
		require.False(t, isReal, "%s without model files is the simulated runner", name)
		require.NoError(t, r.Close())
	}
}
