package catalogue

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// headTree is ../shared/tt-media-server-head (HEAD's Python server); the test is skipped
// without it, except in CI, where it must be there.
func headTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(shareddata.Root()), "tt-media-server-head")
	if _, err := os.Stat(filepath.Join(dir, "tt_model_runners", "runner_fabric.py")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("HEAD's server source is missing in CI: %v", err)
		}
		t.Skipf("HEAD's server source is absent (%v): nothing to compare the catalogue with", err)
	}
	return dir
}

// Every catalogued runner is one of HEAD's, in HEAD's service, hosted by the class HEAD's
// runner_fabric builds for it.
func TestCatalogueMatchesHEAD(t *testing.T) {
	head := headTree(t)
	constants, err := os.ReadFile(filepath.Join(head, "config", "constants.py"))
	require.NoError(t, err)
	fabric, err := os.ReadFile(filepath.Join(head, "tt_model_runners", "runner_fabric.py"))
	require.NoError(t, err)

	member := map[string]string{} // runner name -> ModelRunners member
	for _, m := range regexp.MustCompile(`(?m)^    (\w+) = "([^"]+)"$`).FindAllSubmatch(constants, -1) {
		member[string(m[2])] = string(m[1])
	}
	class := map[string]string{} // ModelRunners member -> module.Class
	for _, m := range regexp.MustCompile(`ModelRunners\.(\w+): lambda wid: __import__\(\s*"([\w.]+)",\s*fromlist=\[[^\]]*\],?\s*\)\.(\w+)\(wid\)`).FindAllSubmatch(fabric, -1) {
		class[string(m[1])] = string(m[2]) + "." + string(m[3])
	}
	require.NotEmpty(t, class, "runner_fabric.py's AVAILABLE_RUNNERS did not parse")
	svcRe := regexp.MustCompile(`(?s)ModelServices\.(\w+): \{([^}]*)\}`)
	service := map[string]Service{} // ModelRunners member -> service
	for _, m := range svcRe.FindAllSubmatch(constants, -1) {
		for _, r := range regexp.MustCompile(`ModelRunners\.(\w+)`).FindAllSubmatch(m[2], -1) {
			service[string(r[1])] = Service(map[string]string{"IMAGE": "image", "AUDIO": "audio", "CNN": "cnn",
				"VIDEO": "video", "TEXT_TO_SPEECH": "text_to_speech"}[string(m[1])])
		}
	}
	for _, m := range Models() {
		t.Run(m.Name, func(t *testing.T) {
			mem, ok := member[m.Name]
			require.True(t, ok, "%s is not in HEAD's ModelRunners", m.Name)
			require.Equal(t, class[mem], m.PythonClass, "HEAD's runner_fabric builds another class")
			require.Equal(t, service[mem], m.Service, "HEAD's MODEL_SERVICE_RUNNER_MAP puts it elsewhere")
		})
	}
}

// The catalogue's own consistency: one entry per name, one default per service, every
// image model with a policy, every model with a canonical id and a Python class.
func TestCatalogueEntries(t *testing.T) {
	seen := map[string]bool{}
	defaults := map[Service]int{}
	for _, m := range Models() {
		require.False(t, seen[m.Name], "%s is catalogued twice", m.Name)
		seen[m.Name] = true
		require.NotEmpty(t, m.Service, m.Name)
		require.NotEmpty(t, m.Canonical, m.Name)
		require.NotEmpty(t, m.PythonClass, m.Name)
		if m.Default {
			defaults[m.Service]++
		}
		if m.Service == ServiceImage {
			require.Positive(t, m.Image.MinSteps, m.Name)
			require.True(t, m.Image.Guidance >= 1 || m.Image.Guidance == 0, "%s: a default guidance > 1, or 0 (takes none)", m.Name)
			require.Equal(t, m.Image.Input != InputNone, len(m.Routes) > 0, "%s: an image-input model names its route", m.Name)
		}
		for d := range m.Presets {
			require.Contains(t, Devices(), d, m.Name)
		}
	}
	for _, s := range Services() {
		require.Equal(t, 1, defaults[s], "service %s needs exactly one default model (MODEL_RUNNER=mock)", s)
	}
}

// Add serves a made-up model until its remove func runs; a second entry of one name panics.
func TestAdd(t *testing.T) {
	remove := Add(Model{Name: "tt-made-up", Service: ServiceCNN, Canonical: "made-up"})
	m, ok := Lookup("tt-made-up")
	require.True(t, ok)
	require.Equal(t, "made-up", m.Canonical)
	require.Panics(t, func() { Add(Model{Name: "tt-made-up"}) })
	remove()
	_, ok = Lookup("tt-made-up")
	require.False(t, ok)
}

// docs/ARCHITECTURE.md's road table says what the catalogue says: every catalogued runner is
// in one row (by name; the other Wan names by the row's tt-wan2.2* wildcard), whose service is
// the model's, whose Go pipeline cell starts "yes" exactly when the model has a Go pipeline,
// and whose Python road cell names the class HEAD's runner_fabric builds (a * in the cell
// matches, as TTWan22*Runner).
func TestRoadTableMatchesCatalogue(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	require.NoError(t, err)
	text := string(doc)
	start := strings.Index(text, "## Which runner runs on which road")
	require.GreaterOrEqual(t, start, 0)
	text = text[start:]
	var rows [][]string
	for _, line := range strings.Split(text[:strings.Index(text[1:], "\n## ")+1], "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if strings.HasPrefix(line, "| ") && len(cells) == 5 && cells[0] != "MODEL_RUNNER" {
			rows = append(rows, cells)
		}
	}
	require.NotEmpty(t, rows, "the road table did not parse")
	name := regexp.MustCompile(`[a-z0-9][a-z0-9.*-]*`)
	rowOf := func(runner string) []string {
		for _, exact := range []bool{true, false} {
			for _, r := range rows {
				for _, n := range name.FindAllString(r[0], -1) {
					if ok, _ := filepath.Match(n, runner); n == runner || !exact && ok {
						return r
					}
				}
			}
		}
		return nil
	}
	for _, m := range Models() {
		t.Run(m.Name, func(t *testing.T) {
			r := rowOf(m.Name)
			require.NotNil(t, r, "the road table has no row for %s", m.Name)
			require.Equal(t, string(m.Service), r[1], "service")
			require.Equal(t, m.GoPipeline, strings.HasPrefix(r[2], "yes"), "Go pipeline cell %q", r[2])
			class := m.PythonClass[strings.LastIndex(m.PythonClass, ".")+1:]
			found := false
			for _, w := range regexp.MustCompile(`[A-Za-z0-9_*]+`).FindAllString(r[4], -1) {
				if ok, _ := filepath.Match(w, class); ok {
					found = true
				}
			}
			require.True(t, found, "the Python road cell %q does not name %s", r[4], class)
		})
	}
}

// Every image model's output size is HEAD's: SDXL follows SDXL_IMAGE_RESOLUTION (0); the
// tt-dit pipelines (SD3.5, Flux.1, Motif, Qwen-Image) are created at tt-metal's default 1024x1024
// (HEAD's runners pass no size); Z-Image-Turbo's compiled models have 64x64 latents, 512x512;
// SDXLForgeRunner's DEFAULT_RESOLUTION is 512.
func TestImageSizesAreHEADs(t *testing.T) {
	want := map[string]int{
		RunnerSDXL: 0, RunnerSDXLImg2Img: 0, RunnerSDXLEdit: 0,
		RunnerSD35: 1024, RunnerFlux1Dev: 1024, RunnerFlux1Schnell: 1024, RunnerMotifImage6B: 1024,
		RunnerQwenImage: 1024, RunnerQwenImage2512: 1024, RunnerZImageTurbo: 512, RunnerXLASDXL: 512,
	}
	for _, m := range Models() {
		if m.Service != ServiceImage {
			continue
		}
		size, ok := want[m.Name]
		require.True(t, ok, "%s: HEAD's size is not pinned here", m.Name)
		require.Equal(t, size, m.Image.Size, m.Name)
	}
}

// Every image model's default guidance is what HEAD's runner for it runs at when a request
// sends none: HEAD's ImageGenerateRequest default (5.0) where the runner passes the request's
// (SDXL, SDXL-512); the pipeline's own where HEAD's TTDiTRunner.run passes none (tt-metal
// models/tt_dit/pipelines: SD3.5 3.5; Flux1Pipeline.__call__ guidance_scale 3.5 for dev,
// schnell none; MotifPipeline.__call__ cfg_scale 5.0; QwenImagePipeline.run_single_prompt
// cfg_scale 4.0); Z-Image-Turbo none. PythonGuidance is the same for the tt-dit runners.
func TestImageGuidanceIsHEADs(t *testing.T) {
	want := map[string]float64{
		RunnerSDXL: 5, RunnerSDXLImg2Img: 5, RunnerSDXLEdit: 5, RunnerXLASDXL: 5,
		RunnerSD35: 3.5, RunnerFlux1Dev: 3.5, RunnerFlux1Schnell: 0, RunnerMotifImage6B: 5,
		RunnerQwenImage: 4, RunnerQwenImage2512: 4, RunnerZImageTurbo: 0,
	}
	python := map[string]float64{
		RunnerSD35: 3.5, RunnerFlux1Dev: 3.5, RunnerFlux1Schnell: 1, RunnerMotifImage6B: 5,
		RunnerQwenImage: 4, RunnerQwenImage2512: 4, RunnerZImageTurbo: 1,
	}
	for _, m := range Models() {
		if m.Service != ServiceImage {
			continue
		}
		g, ok := want[m.Name]
		require.True(t, ok, "%s: HEAD's guidance is not pinned here", m.Name)
		require.Equal(t, g, m.Image.Guidance, m.Name)
		require.Equal(t, python[m.Name], m.Image.PythonGuidance, "%s: the guidance HEAD's class always uses", m.Name)
	}
}

// headCell is one of HEAD's ModelConfigs cells as the test's Python dumps it.
type headCell struct {
	Mesh      [2]int `json:"mesh"`
	IsGalaxy  bool   `json:"is_galaxy"`
	DeviceIDs string `json:"device_ids"`
	MaxBatch  int    `json:"max_batch_size"`
	Timeout   int    `json:"timeout"`
}

// headModelConfigs dumps HEAD's real ModelConfigs (config/constants.py, imported by the
// interpreter that has HEAD's pydantic) by runner and device.
func headModelConfigs(t *testing.T) map[string]map[string]headCell {
	t.Helper()
	road := e2e.HeadRoad(t, filepath.Join("..", ".."))
	head, err := filepath.Abs(e2e.HeadDir(filepath.Join("..", "..")))
	require.NoError(t, err)
	const dump = `import json
from config.constants import ModelConfigs
out = {}
for (runner, device), c in ModelConfigs.items():
    out.setdefault(runner.value, {})[device.value] = {
        "mesh": list(c.get("device_mesh_shape", (1, 1))), "is_galaxy": bool(c.get("is_galaxy", True)),
        "device_ids": c.get("device_ids", ""), "max_batch_size": c.get("max_batch_size", 0),
        "timeout": c.get("request_processing_timeout_seconds", 0)}
print(json.dumps(out))`
	cmd := exec.CommandContext(t.Context(), road.Exe, "-c", dump)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+head+string(os.PathListSeparator)+road.PythonPath)
	out, err := cmd.Output()
	require.NoError(t, err)
	var cells map[string]map[string]headCell
	require.NoError(t, json.Unmarshal(out, &cells))
	return cells
}

// Every MODEL x DEVICE preset is HEAD's ModelConfigs cell, field for field (mesh, IS_GALAXY,
// DEVICE_IDS, MAX_BATCH_SIZE, request_processing_timeout_seconds), and every HEAD cell of a
// catalogued runner on a DEVICE this server knows is a preset.
func TestPresetsAreHEADsModelConfigs(t *testing.T) {
	cells := headModelConfigs(t)
	for _, m := range Models() {
		for _, d := range Devices() {
			t.Run(m.Name+"@"+d, func(t *testing.T) {
				h, atHEAD := cells[m.Name][d]
				p, ours := m.Presets[d]
				require.Equal(t, atHEAD, ours, "a preset exactly where HEAD has a cell")
				if !ours {
					return
				}
				require.Equal(t, headCell{Mesh: p.Mesh, IsGalaxy: p.IsGalaxy, DeviceIDs: p.DeviceIDs, MaxBatch: p.MaxBatchSize,
					Timeout: int(p.RequestTimeout / time.Second)}, h)
			})
		}
	}
}

// headInts reads the integer constants NAME = 123 of a HEAD source file.
func headInts(t *testing.T, path string) map[string]int {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*) = (\d+)\s*(?:#.*)?$`).FindAllStringSubmatch(string(src), -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		out[m[1]] = n
	}
	return out
}

// Every video model's clip is HEAD's: Wan2.2's WAN22_NUM_FRAMES and small/large-mesh
// resolutions and its forced step counts (config/constants.py), LTX-2.3's LTX_* (dit_runners.py),
// MiniMax-H3's working points and steps (minimax_h3_policy.py), Mochi's MochiPipelineConfig
// defaults (168 frames at 480x848, dit_runners.py's comment); 16 fps where HEAD's
// VideoManager.export_to_mp4 default applies (utils/video_manager.py), LTX's LTX_FPS, and
// MiniMax's 24 (MINIMAX_H3_FPS lives in tt-metal's packing module, not in HEAD's tree).
func TestVideoSpecsAreHEADs(t *testing.T) {
	head := headTree(t)
	c := headInts(t, filepath.Join(head, "config", "constants.py"))
	dit := headInts(t, filepath.Join(head, "tt_model_runners", "dit_runners.py"))
	mm := headInts(t, filepath.Join(head, "tt_model_runners", "minimax_h3_policy.py"))
	policy, err := os.ReadFile(filepath.Join(head, "tt_model_runners", "minimax_h3_policy.py"))
	require.NoError(t, err)
	vm, err := os.ReadFile(filepath.Join(head, "utils", "video_manager.py"))
	require.NoError(t, err)
	require.Contains(t, string(vm), "def export_to_mp4(self, frames: NDArray, fps: int = 16)", "HEAD's export rate")
	constants, err := os.ReadFile(filepath.Join(head, "config", "constants.py"))
	require.NoError(t, err)
	res := regexp.MustCompile(`WAN22_RESOLUTION_(SMALL|LARGE)_MESH = Resolution\(height=(\d+), width=(\d+)\)`).FindAllStringSubmatch(string(constants), -1)
	require.Len(t, res, 2)
	size := map[string][2]int{}
	for _, r := range res {
		h, _ := strconv.Atoi(r[2])
		w, _ := strconv.Atoi(r[3])
		size[r[1]] = [2]int{w, h}
	}
	wan := func(forced int) VideoSpec {
		return VideoSpec{ForcedSteps: forced, FPS: 16, Frames: c["WAN22_NUM_FRAMES"], Width: size["SMALL"][0], Height: size["SMALL"][1],
			LargeWidth: size["LARGE"][0], LargeHeight: size["LARGE"][1]}
	}
	var aspects [][2]int
	line := regexp.MustCompile(`MINIMAX_H3_ASPECT_RATIOS = \(([^\n]*)\)\n`).FindSubmatch(policy)
	require.NotNil(t, line)
	for _, p := range regexp.MustCompile(`\((\d+), (\d+)\)`).FindAllSubmatch(line[1], -1) {
		w, _ := strconv.Atoi(string(p[1]))
		h, _ := strconv.Atoi(string(p[2]))
		aspects = append(aspects, [2]int{w, h})
	}
	def := regexp.MustCompile(`MINIMAX_H3_DEFAULT_ASPECT_RATIO = \((\d+), (\d+)\)`).FindSubmatch(policy)
	require.NotNil(t, def)
	defW, _ := strconv.Atoi(string(def[1]))
	defH, _ := strconv.Atoi(string(def[2]))
	require.Contains(t, string(policy), "MINIMAX_H3_DURATIONS_S = tuple(range(4, 16))")
	var durations []int
	for d := 4; d < 16; d++ {
		durations = append(durations, d)
	}
	want := map[string]VideoSpec{
		RunnerWan22: wan(0), RunnerWan22T2VProdia: wan(0),
		RunnerWan22I2V: wan(0), RunnerWan22I2VProdia: wan(0), RunnerWan22I2VLoRA: wan(0),
		RunnerWan22I2VAniSora: wan(c["WAN22_ANISORA_NUM_STEPS"]), RunnerWan22I2VDistill: wan(c["WAN22_DISTILL_NUM_STEPS"]),
		RunnerWan22I2VLightning: wan(c["WAN22_LIGHTNING_NUM_STEPS"]),
		RunnerMochi1:            {FPS: 16, Frames: 168, Width: 848, Height: 480},
		RunnerLTX23Distilled:    {FPS: dit["LTX_FPS"], Frames: dit["LTX_NUM_FRAMES"], Width: dit["LTX_WIDTH"], Height: dit["LTX_HEIGHT"]},
		RunnerMiniMaxH3T2VA: {FPS: 24, ShortSide: 768, ForcedSteps: mm["MINIMAX_H3_NUM_INFERENCE_STEPS"], AspectRatios: aspects,
			DefaultAspect: [2]int{defW, defH}, Durations: durations, DefaultDuration: mm["MINIMAX_H3_DEFAULT_DURATION_S"]},
	}
	for _, m := range Models() {
		if m.Service != ServiceVideo {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			w, ok := want[m.Name]
			require.True(t, ok, "HEAD's clip is not pinned here")
			got := *m.Video
			got.I2V, got.Audio = false, nil // what the request needs and the soundtrack: not the clip
			require.Equal(t, w, got)
		})
	}
}
