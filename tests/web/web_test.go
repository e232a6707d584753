// Package web tests the server's browser pages end to end: it builds and starts the real
// tt-media-server binary (mock-device mode, one process per model family) and drives /ui and
// /docs in Debian's chromium with playwright-core (web.cjs): an image is generated and
// rendered, a PNG is classified, a WAV file written by the test is transcribed with the text
// streaming onto the page (NDJSON and SSE), and the API reference renders from the embedded
// Redoc bundle with no request to another origin.
// Screenshots go to tests/web/artifacts (or TT_WEB_ARTIFACTS). Install the browser and the
// npm package with tests/web/install.sh; without them the tests skip and say so.
package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tenstorrent/tt-media-server-go/internal/wavtest"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"

	"github.com/stretchr/testify/require"
)

var (
	binPath  string
	repoRoot string
	runDir   string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	// Without the browser tools the tests skip with the same message; no binary is needed.
	skip := missingTools()
	if skip != "" {
		fmt.Fprintln(os.Stderr, "web: "+skip)
	}
	env, err := e2e.Prepare("tt-media-server-web-", skip == "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "web:", err)
		return 1
	}
	defer env.Close()
	repoRoot, binPath, runDir = env.Root, env.Bin, env.RunDir
	return m.Run()
}

func chromiumPath() string {
	if p := os.Getenv("TT_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// nodeModules is where install.sh put playwright-core.
func nodeModules() string {
	dir := os.Getenv("TT_WEB_NODE_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "tt-media-server-go", "web-node")
	}
	return filepath.Join(dir, "node_modules")
}

// missingTools says what is missing for the browser tests, or "".
func missingTools() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not installed: the browser tests are skipped (tests/web/install.sh)"
	}
	if _, err := os.Stat(chromiumPath()); err != nil {
		return fmt.Sprintf("chromium is not installed at %s: the browser tests are skipped (run tests/web/install.sh, or set TT_CHROMIUM)", chromiumPath())
	}
	if _, err := os.Stat(filepath.Join(nodeModules(), "playwright-core", "package.json")); err != nil {
		return fmt.Sprintf("playwright-core is not installed in %s: the browser tests are skipped (run tests/web/install.sh)", nodeModules())
	}
	return ""
}

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TT_WEB_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(repoRoot, "tests", "web", "artifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// lockedBuffer collects a subprocess's output.
type lockedBuffer = e2e.LockedBuffer

// startServer runs the binary on a free loopback port with fast mock latencies and the
// overrides, waits for /tt-liveness to answer 200, and stops it (SIGTERM, exit 0) at the end.
func startServer(t *testing.T, overrides map[string]string) string {
	t.Helper()
	port := e2e.FreePort(t)
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"),
		"SERVICE_HOST": "127.0.0.1", "SERVICE_PORT": strconv.Itoa(port),
		"MOCK_WARMUP_SECONDS": "0.05", "MOCK_STEP_SECONDS": "0.002", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.001",
		"MOCK_CNN_SECONDS": "0.001", "MOCK_DEVICES_COUNT": "1", "SHUTDOWN_GRACE_SECONDS": "5", "LOG_LEVEL": "WARNING",
	}
	for k, v := range overrides {
		env[k] = v
	}
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	out := &lockedBuffer{}
	cmd := exec.Command(binPath)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = runDir, list, out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server exited with %v after SIGTERM", err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Logf("killed server: %v", <-done)
			t.Errorf("server did not stop within 10 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("server output:\n%s", out.String())
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get(url + "/tt-liveness")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case err := <-done:
			t.Fatalf("server exited before it was ready: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready after 20 s (%v)\n%s", err, out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// browse runs web.cjs against the servers and returns what it reported.
func browse(t *testing.T, env ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "web.cjs")
	cmd.Dir = filepath.Join(repoRoot, "tests", "web")
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules(), "TT_ARTIFACTS="+artifactsDir(t), "TT_CHROMIUM="+chromiumPath())
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	require.NoErrorf(t, err, "web.cjs failed:\n%s\n%s", stderr.String(), stdout.String())
	var res map[string]any
	require.NoErrorf(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res), "web.cjs printed %q", stdout.String())
	require.Equal(t, true, res["ok"])
	t.Logf("browser run in %v: %s", time.Since(start).Round(time.Millisecond), bytes.TrimSpace(stdout.Bytes()))
	return res
}

func skipIfMissing(t *testing.T) {
	t.Helper()
	if skip := missingTools(); skip != "" {
		t.Skip(skip)
	}
}

// requirePNG checks that the screenshot exists and is a PNG of a plausible size.
func requirePNG(t *testing.T, path any) {
	t.Helper()
	p, ok := path.(string)
	require.True(t, ok, "no screenshot path in %v", path)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")), "%s is not a PNG", p)
	require.Greater(t, len(data), 10<<10, "%s is suspiciously small", p)
}

// speechLikeWAV is 16 kHz mono PCM16: three tones separated by pauses, so the server's
// speech segmentation finds three segments.
func speechLikeWAV() []byte {
	const rate = 16000
	var samples []int16
	add := func(seconds, freq, amp float64) {
		n := int(seconds * rate)
		for i := range n {
			samples = append(samples, int16(amp*32767*math.Sin(2*math.Pi*freq*float64(i)/rate)))
		}
	}
	add(0.3, 0, 0)
	add(1.4, 220, 0.5)
	add(0.8, 0, 0)
	add(1.2, 330, 0.4)
	add(0.8, 0, 0)
	add(1.5, 440, 0.5)
	add(0.3, 0, 0)
	return wavtest.PCM16(rate, samples)
}

// testPNG is a 96x64 picture with some structure (a gradient and a disc).
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 96, 64))
	for y := range 64 {
		for x := range 96 {
			c := color.RGBA{uint8(x * 2), uint8(100 + y), 180, 255}
			if (x-48)*(x-48)+(y-32)*(y-32) < 400 {
				c = color.RGBA{240, 200, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// TestBrowser drives the pages of four servers, one per model family, in one chromium
// session: on the image server the demo generates an image and shows it; on the
// classification server it classifies a PNG; on the Whisper server it transcribes a WAV file
// with the text streaming in, as NDJSON and as SSE; on the SpeechT5 server the speak panel
// fills its voice picker from /v1/audio/voices, plays streamed PCM through Web Audio as it
// comes, plays whole mp3, wav, flac, opus and pcm answers of the same length, and shows a refused
// speed; /docs renders the spec. Each page shows
// only its family's section, and nothing is requested from another origin. On the Wan2.2 server
// the video panel submits a job, its progress bar moves through the steps, and the MP4 plays.
func TestBrowser(t *testing.T) {
	skipIfMissing(t)
	dir := t.TempDir()
	wav, pngPath := filepath.Join(dir, "speech.wav"), filepath.Join(dir, "picture.png")
	require.NoError(t, os.WriteFile(wav, speechLikeWAV(), 0o644))
	require.NoError(t, os.WriteFile(pngPath, testPNG(t), 0o644))
	imageURL := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace"})
	// 6.3 s of audio at 0.4 s per second: the words stream over about 2.5 s.
	audioURL := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.4"})
	cnnURL := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet"})
	// 10 ms per decoder step (32 ms of audio): the text's chunks stream over about 2 s.
	speechURL := startServer(t, map[string]string{"MODEL_RUNNER": "tt-speecht5-tts", "MOCK_TTS_STEP_SECONDS": "0.01"})

	// 20 steps of 0.1 s: the progress bar moves over about 2 s.
	videoURL := startServer(t, map[string]string{"MODEL_RUNNER": "tt-wan2.2", "MOCK_STEP_SECONDS": "0.1", "MOCK_VIDEO_SCALE": "8",
		"TT_VIDEO_OUTPUT_DIR": filepath.Join(dir, "videos"), "JOB_DATABASE_PATH": filepath.Join(dir, "jobs.db"), "CANARY_ENABLED": "false"})

	res := browse(t, "TT_IMAGE_URL="+imageURL, "TT_AUDIO_URL="+audioURL, "TT_CNN_URL="+cnnURL, "TT_SPEECH_URL="+speechURL,
		"TT_VIDEO_URL="+videoURL, "TT_WAV="+wav, "TT_PNG="+pngPath)

	img := res["image"].(map[string]any)
	shown := img["image"].(map[string]any)
	require.Equal(t, 1024.0, shown["w"])
	require.Equal(t, 1024.0, shown["h"])
	require.Greater(t, shown["std"].(float64), 5.0, "the rendered image is a flat fill")
	requirePNG(t, img["screenshot"])

	cnn := res["cnn"].(map[string]any)
	require.NotEmpty(t, cnn["top1"])
	requirePNG(t, cnn["screenshot"])

	audio := res["audio"].(map[string]any)
	for _, api := range []string{"ndjson", "sse"} {
		r := audio[api].(map[string]any)
		require.GreaterOrEqual(t, r["chunks"].(float64), 3.0, api)
		require.Less(t, r["firstMs"].(float64), r["doneMs"].(float64)-200, "%s: not streamed", api)
		require.Greater(t, len(r["text"].(string)), len(r["partial"].(string)), api)
		requirePNG(t, r["screenshot"])
		requirePNG(t, r["midScreenshot"])
	}
	require.GreaterOrEqual(t, audio["ndjson"].(map[string]any)["segments"].(float64), 2.0)

	speech := res["speech"].(map[string]any)
	streamed := speech["streamed"].(map[string]any)
	require.GreaterOrEqual(t, streamed["chunks"].(float64), 2.0)
	require.Less(t, streamed["firstAudioMs"].(float64), streamed["doneAt"].(float64)-150, "speech: not streamed")
	for _, f := range []string{"mp3", "wav", "flac", "opus", "pcm"} {
		file := speech["files"].(map[string]any)[f].(map[string]any)
		slack := 0.15
		if f == "flac" { // chromium's estimate for a streamed FLAC: up to one block short (web.cjs)
			slack = 0.26
		}
		require.InDelta(t, streamed["duration"].(float64), file["duration"].(float64), slack, f)
	}
	require.Contains(t, speech["refused"], "speed")
	requirePNG(t, speech["screenshot"])
	requirePNG(t, speech["midScreenshot"])

	vid := res["video"].(map[string]any)
	require.Equal(t, "done", vid["state"])
	require.Equal(t, 104.0, vid["width"], "832 / MOCK_VIDEO_SCALE")
	require.Equal(t, 81.0, vid["frames"])
	require.InDelta(t, 81.0/16, vid["duration"].(float64), 0.1)
	require.GreaterOrEqual(t, len(vid["progress"].([]any)), 3, "the bar moved: %v", vid["progress"])
	requirePNG(t, vid["screenshot"])
	requirePNG(t, vid["midScreenshot"])

	requirePNG(t, res["docs"].(map[string]any)["screenshot"])
}
