package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/color"
	"image/jpeg"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/procrunner"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// Python workers (DEVICE_BACKEND=python): the real binary supervising workers/python/tt_worker.py
// processes that host our fake runners (workers/python/fakes: HEAD's interface, no upstream
// code), through the same procrunner supervision as the Go device workers. The image streaming
// suites of image_stream_test.go also run on them (isolations includes "python").

// pythonEnv turns a mock-server environment into one whose pools run on Python workers
// hosting the fake runners (e2e.PythonBackend; DEVICE_IDS defaults to one group per
// MOCK_DEVICES_COUNT chip, serverEnv's 2 when unset).
func pythonEnv(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	n, err := strconv.Atoi(out["MOCK_DEVICES_COUNT"])
	if err != nil {
		n = 2
	}
	e2e.PythonBackend(t, out, repoRoot, n)
	return out
}

// pythonRoads are the two ways the tests host the fake runners: as subclasses of HEAD's REAL
// BaseDeviceRunner receiving HEAD's real request models (e2e.HeadRoad), and on our plain
// stand-ins of them (e2e.PlainRoad).
var pythonRoads = []struct {
	name string
	road func(t testing.TB) e2e.PythonRoad
}{
	{"head", func(t testing.TB) e2e.PythonRoad { return e2e.HeadRoad(t, repoRoot) }},
	{"plain", func(t testing.TB) e2e.PythonRoad { return e2e.PlainRoad(t, repoRoot) }},
}

// pythonEnvOn is pythonEnv on the given road.
func pythonEnvOn(t *testing.T, road e2e.PythonRoad, env map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	e2e.PythonBackendOn(t, road, out, 1)
	return out
}

// startPython starts a server on Python workers of road (startServer gives them
// e2e.WorkerStartLimit to be ready).
func startPython(t *testing.T, road e2e.PythonRoad, env map[string]string) *server {
	t.Helper()
	return startServer(t, pythonEnvOn(t, road, env))
}

// requireHosted checks, on the HEAD road, that the worker's runner subclasses HEAD's real
// BaseDeviceRunner and that its requests were HEAD's real domain classes (module, the worker's
// log says where each came from).
func requireHosted(t *testing.T, s *server, road e2e.PythonRoad, requestModule string) {
	t.Helper()
	if road.Name != "head" {
		return
	}
	head := e2e.HeadDir(repoRoot)
	log := s.stderr.String()
	require.Contains(t, log, "tt_model_runners.base_device_runner.BaseDeviceRunner from "+filepath.Join(head, "tt_model_runners", "base_device_runner.py"))
	require.Contains(t, log, "from "+filepath.Join(head, "domain", requestModule+".py"))
}

// isolationEnv is env under one of the isolations: WORKER_ISOLATION for the Go runners, or
// Python workers.
func isolationEnv(t *testing.T, isolation string, env map[string]string) map[string]string {
	if isolation == "python" {
		return pythonEnv(t, env)
	}
	out := map[string]string{"WORKER_ISOLATION": isolation}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// busyWorker waits until a worker reports progress and returns its id and pid.
func busyWorker(t *testing.T, s *server) (string, int) {
	t.Helper()
	var id string
	var pid int
	eventually(t, 10*time.Second, "a worker reports progress", func() bool {
		for wid, w := range workerInfo(t, s) {
			if _, ok := w["progress"]; ok {
				id, pid = wid, int(jsonNumber(t, w["pid"], "pid"))
				return true
			}
		}
		return false
	})
	return id, pid
}

// TestPythonImage: a Python worker serves images in both dialects, on HEAD's real classes and on
// the plain stand-ins.
func TestPythonImage(t *testing.T) {
	t.Parallel()
	for _, rd := range pythonRoads {
		t.Run(rd.name, func(t *testing.T) {
			t.Parallel()
			testPythonImage(t, rd.road(t))
		})
	}
}

func testPythonImage(t *testing.T, road e2e.PythonRoad) {
	s := startPython(t, road, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.005",
		"DEVICE_IDS": "(0)"})
	require.Contains(t, s.stderr.String(), "tt_model_runners.sdxl_generate_runner_trace.TTSDXLGenerateRunnerTrace")

	t.Run("reference dialect, deterministic", func(t *testing.T) {
		body := `{"prompt":"Volcano on a beach","guidance_scale":7.0,"seed":3,"num_inference_steps":12}`
		a := generate(t, s, "/image/generations", body)
		b := generate(t, s, "/image/generations", body)
		require.Len(t, a, 1)
		require.Equal(t, a, b, "same request, same picture")
		img, err := jpeg.Decode(bytes.NewReader(a[0]))
		require.NoError(t, err)
		require.Equal(t, 1024, img.Bounds().Dx())
		c := generate(t, s, "/image/generations", strings.Replace(body, `"seed":3`, `"seed":4`, 1))
		require.NotEqual(t, a, c, "another seed, another picture")
		requireHosted(t, s, road, "image_generate_request")
	})
	t.Run("OpenAI dialect, two images", func(t *testing.T) {
		imgs := generateV1(t, s, `{"prompt":"Volcano on a beach","n":2,"output_format":"jpeg"}`)
		require.Len(t, imgs, 2)
		require.NotEqual(t, imgs[0], imgs[1])
	})
	t.Run("SDXL_IMAGE_RESOLUTION reaches the runner", func(t *testing.T) {
		small := startPython(t, road, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.005",
			"DEVICE_IDS": "(0)", "SDXL_IMAGE_RESOLUTION": "(512, 512)"})
		imgs := generateV1(t, small, `{"prompt":"small","output_format":"jpeg"}`)
		img, err := jpeg.Decode(bytes.NewReader(imgs[0]))
		require.NoError(t, err)
		require.Equal(t, 512, img.Bounds().Dx())
	})
	t.Run("runner errors keep their class", func(t *testing.T) {
		r := s.postJSON(t, "/image/generations", `{"prompt":"[[bad]] x","guidance_scale":7.0,"seed":3,"num_inference_steps":12}`)
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
		require.Contains(t, string(r.Body), "fake runner refuses the request")
		r = s.postJSON(t, "/image/generations", `{"prompt":"[[fail]] x","guidance_scale":7.0,"seed":3,"num_inference_steps":12}`)
		require.Equalf(t, http.StatusInternalServerError, r.Status, "%s", r)
		require.Contains(t, string(r.Body), "fake device error")
		generate(t, s, "/image/generations", `{"prompt":"after the errors","guidance_scale":7.0,"seed":3,"num_inference_steps":12}`)
	})
}

// TestPythonTranscription: Python workers transcribe (JSON, pre-processed segments, NDJSON and
// SSE streams, fan-out), on HEAD's real classes and on the plain stand-ins.
func TestPythonTranscription(t *testing.T) {
	t.Parallel()
	for _, rd := range pythonRoads {
		t.Run(rd.name, func(t *testing.T) {
			t.Parallel()
			testPythonTranscription(t, rd.road(t))
		})
	}
}

func testPythonTranscription(t *testing.T, road e2e.PythonRoad) {
	s := startPython(t, road, map[string]string{"MODEL_RUNNER": "tt-whisper", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.002",
		"DEVICE_IDS": "(0),(1)", "MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS": "300"})
	wav3s := toneGapTone()
	fake := regexp.MustCompile(`Python fake transcription of [0-9.]+ seconds of (audio|silence)`)

	t.Run("JSON", func(t *testing.T) {
		r := s.postJSON(t, audioPath, fmt.Sprintf(`{"stream":false,"file":"%s"}`, base64.StdEncoding.EncodeToString(wav3s)))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 3.0, 1e-3)
		require.Regexp(t, fake, tr.Text)
		requireHosted(t, s, road, "audio_processing_request")
	})
	t.Run("multipart with pre-processing", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("x.wav", "audio/wav", wav3s), field("stream", "false"), field("is_preprocessing_enabled", "true"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 3.0, 1e-3)
		require.Len(t, tr.Segments, 2, "the VAD's two tones, transcribed by the runner segment by segment")
		for _, seg := range tr.Segments {
			require.Regexp(t, fake, seg.Text)
		}
	})
	t.Run("NDJSON stream", func(t *testing.T) {
		body := fmt.Sprintf(`{"stream":true,"file":"%s"}`, base64.StdEncoding.EncodeToString(wav3s))
		tr := parseStream(t, s.postJSON(t, audioPath, body))
		requireTranscription(t, tr, 3.0, 1e-3)
		require.Regexp(t, fake, tr.Text)
	})
	t.Run("SSE stream", func(t *testing.T) {
		r := s.postMultipart(t, "/v1/audio/transcriptions", file("x.wav", "audio/wav", wav3s), field("model", "whisper-1"), field("stream", "true"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Contains(t, r.Header.Get("Content-Type"), "text/event-stream")
		var deltas []string
		sc := bufio.NewScanner(bytes.NewReader(r.Body))
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(line, `"transcript.text.delta"`) {
				deltas = append(deltas, line)
			}
		}
		require.Greater(t, len(deltas), 3, "word by word: %s", r.Body)
		require.Contains(t, string(r.Body), `"type":"transcript.text.done"`)
	})
	t.Run("fan-out across both workers", func(t *testing.T) {
		wav := wavPCM16(16000, speechLike())
		res, chunks, _ := transcribeTimed(t, s, wav)
		n, err := strconv.Atoi(chunks)
		require.NoError(t, err)
		require.Greater(t, n, 2, "a 3-minute file is split into chunks")
		require.Regexp(t, fake, res.Text)
		jobs := regexp.MustCompile(`(?m)^tt_media_server_jobs_total\{[^}]*outcome="ok"[^}]*worker="(\d)"[^}]*\} (\d+)`)
		per := map[string]int{}
		for _, m := range jobs.FindAllStringSubmatch(string(s.get(t, "/metrics").Body), -1) {
			v, _ := strconv.Atoi(m[2])
			per[m[1]] += v
		}
		require.Greater(t, per["0"], 0, "worker 0 ran chunks: %v", per)
		require.Greater(t, per["1"], 0, "worker 1 ran chunks: %v", per)
	})
}

// TestPythonCNN: a Python worker classifies, on HEAD's real classes and on the plain stand-ins.
func TestPythonCNN(t *testing.T) {
	t.Parallel()
	for _, rd := range pythonRoads {
		t.Run(rd.name, func(t *testing.T) {
			t.Parallel()
			testPythonCNN(t, rd.road(t))
		})
	}
}

func testPythonCNN(t *testing.T, road e2e.PythonRoad) {
	s := startPython(t, road, map[string]string{"MODEL_RUNNER": "tt-xla-resnet", "DEVICE_IDS": "(0)"})
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, drawPicture(320, 240, color.RGBA{R: 200, G: 40, B: 30, A: 255}), nil))
	r := s.postMultipart(t, "/v1"+cnnPath, file("x.jpg", "image/jpeg", buf.Bytes()), field("top_k", "3"), field("min_confidence", "10"))
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	body := r.obj(t)
	item := body["image_data"].([]any)[0].(map[string]any)
	require.NotEmpty(t, item["top1_class_label"])
	require.Regexp(t, `^[0-9]+\.[0-9]{4}%$`, item["top1_class_probability"])
	out := item["output"].(map[string]any)
	require.Len(t, out["labels"], 3)
	require.Equal(t, item["top1_class_label"], out["labels"].([]any)[0])
	again := s.postMultipart(t, "/v1"+cnnPath, file("x.jpg", "image/jpeg", buf.Bytes()), field("top_k", "3"), field("min_confidence", "10"))
	require.Equal(t, r.Body, again.Body, "deterministic labels")
	requireHosted(t, s, road, "image_search_request")
}

// TestPythonKill9: a Python worker killed with SIGKILL mid-request fails that request with 503;
// the request running on the other worker completes; the killed worker comes back.
func TestPythonKill9(t *testing.T) {
	t.Parallel()
	s := startServer(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.1",
		"DEVICE_IDS": "(0),(1)", "RESET_DEVICE_SLEEP_TIME": "0.1"}))
	waitAllWorkers(t, s, 2)
	results := make([]reply, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			results[i] = s.postJSON(t, "/image/generations",
				fmt.Sprintf(`{"prompt":"request %d","guidance_scale":7.0,"seed":%d,"num_inference_steps":30}`, i, i))
		})
	}
	eventually(t, 10*time.Second, "both workers busy", func() bool {
		busy := 0
		for _, w := range workerInfo(t, s) {
			if _, ok := w["progress"]; ok {
				busy++
			}
		}
		return busy == 2
	})
	victim, pid := busyWorker(t, s)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	wg.Wait()
	var codes []int
	for _, r := range results {
		codes = append(codes, r.Status)
		if r.Status == http.StatusServiceUnavailable {
			require.Contains(t, string(r.Body), "device lost")
		}
	}
	require.ElementsMatch(t, []int{http.StatusOK, http.StatusServiceUnavailable}, codes, "%s / %s", results[0], results[1])
	eventually(t, e2e.WorkerStartLimit, "the killed worker is back", func() bool {
		counts, ready, _ := restartCounts(t, s)
		return ready && counts[victim] == 1
	})
	require.NotEqual(t, pid, int(jsonNumber(t, workerInfo(t, s)[victim]["pid"], "pid")), "a new process")
	generate(t, s, "/image/generations", `{"prompt":"after","guidance_scale":7.0,"seed":1,"num_inference_steps":12}`)
}

// TestPythonSIGSTOP: a stopped Python worker (its heartbeats stop with it) is killed at the
// job's deadline plus the grace (procrunner.DefaultGrace); the client gets 504 at its deadline,
// before the kill; RESET_DEVICE_COMMAND runs with the group's chips; the worker comes back and
// serves. The stopped request's deadline is its own (X-Request-Timeout: 3 s), so the request
// after the restart has the server's default minutes, not a deadline a loaded machine can miss.
func TestPythonSIGSTOP(t *testing.T) {
	t.Parallel()
	const deadline = 3 * time.Second
	resetLog := filepath.Join(t.TempDir(), "reset.log")
	s := startServer(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.2",
		"DEVICE_IDS": "(0,1)", "DEVICE_MESH_SHAPE": "(1,2)",
		"RESET_DEVICE_COMMAND": `echo "reset $TT_VISIBLE_DEVICES" >> ` + resetLog}))
	type answer struct {
		r    reply
		took time.Duration
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		// 50 steps of 0.2 s: the job outlasts its deadline however late the worker is stopped.
		r, err := tryDo(http.MethodPost, s.URL+"/image/generations",
			[]byte(`{"prompt":"stopped","guidance_scale":7.0,"seed":1,"num_inference_steps":50}`), "Content-Type", "application/json",
			"Authorization", bearer, "X-Request-Timeout", strconv.FormatFloat(deadline.Seconds(), 'f', -1, 64))
		if err != nil {
			r = reply{Body: []byte(err.Error())}
		}
		done <- answer{r, time.Since(start)}
	}()
	_, pid := busyWorker(t, s)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	a := <-done
	require.Equalf(t, http.StatusGatewayTimeout, a.r.Status, "%s", a.r)
	// The kill comes at deadline + grace after the server took the request (after start): an
	// answer sooner is the deadline's, not the kill's.
	require.Less(t, a.took, deadline+procrunner.DefaultGrace, "504 at the deadline, not at the kill")
	eventually(t, e2e.WorkerStartLimit, "reset ran and the worker is back", func() bool {
		counts, ready, _ := restartCounts(t, s)
		return ready && counts["0,1"] == 1
	})
	data, err := os.ReadFile(resetLog)
	require.NoError(t, err)
	require.Equal(t, "reset 0,1\n", string(data))
	require.Contains(t, workerInfo(t, s)["0,1"]["last_error"], "did not answer after the job's deadline")
	require.Error(t, syscall.Kill(pid, 0), "the stopped process was killed")
	generate(t, s, "/image/generations", `{"prompt":"after","guidance_scale":7.0,"seed":1,"num_inference_steps":12}`)
}

// TestPythonFaults: a runner that holds the GIL longer than the heartbeat limit (5 s) is not
// taken for dead (heartbeats come from a helper process); an abort in the runner is a 503 that
// quotes the interpreter's last words; a failing warm-up shows in /tt-liveness.
func TestPythonFaults(t *testing.T) {
	t.Parallel()
	s := startServer(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.001",
		"DEVICE_IDS": "(0)", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "30"}))
	t.Run("GIL held for 6 s", func(t *testing.T) {
		start := time.Now()
		generate(t, s, "/image/generations", `{"prompt":"[[gil:6]]","guidance_scale":7.0,"seed":1,"num_inference_steps":12}`)
		require.Greater(t, time.Since(start), 5*time.Second)
		counts, _, _ := restartCounts(t, s)
		require.Zero(t, counts["0"], "not restarted")
	})
	t.Run("abort", func(t *testing.T) {
		r := s.postJSON(t, "/image/generations", `{"prompt":"[[crash]]","guidance_scale":7.0,"seed":1,"num_inference_steps":12}`)
		require.Equalf(t, http.StatusServiceUnavailable, r.Status, "%s", r)
		require.Contains(t, string(r.Body), "Fatal Python error: Aborted")
		eventually(t, e2e.WorkerStartLimit, "the worker is back", func() bool {
			counts, ready, _ := restartCounts(t, s)
			return ready && counts["0"] == 1
		})
	})
	t.Run("a runner class that cannot load fails the worker at once", func(t *testing.T) {
		f := launch(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "DEVICE_IDS": "(0)",
			"PYTHON_RUNNER_CLASS": "no_such_module:Runner"}))
		waitFailed(t, f, "0")
		w := workerInfo(t, f)["0"]
		require.Contains(t, w["last_error"], "ModuleNotFoundError: No module named 'no_such_module'")
		require.Contains(t, w["last_error"], "PYTHON_RUNNER_CLASS='no_such_module:Runner'")
		require.EqualValues(t, 0, w["restart_count"], "a configuration error is not retried")
		f.sigterm(t)
		require.Equal(t, 0, f.waitExit(t, 10*time.Second))
	})
	t.Run("the canary asks the runner's health_check", func(t *testing.T) {
		f := launch(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet", "DEVICE_IDS": "(0)",
			"FAKE_RUNNER_HEALTH_FAIL": "1", "CANARY_INTERVAL_SECONDS": "0.3"}))
		eventually(t, e2e.WorkerStartLimit, "the canary restarted the worker", func() bool {
			if _, err := tryDo(http.MethodGet, f.URL+"/tt-liveness", nil); err != nil {
				return false
			}
			w := workerInfo(t, f)["0"]
			return jsonNumber(t, w["restart_count"], "restart_count") >= 1
		})
		require.Contains(t, f.stderr.String(), "ForgeResnetRunner.health_check() returned False")
		f.sigterm(t)
		require.Equal(t, 0, f.waitExit(t, 10*time.Second))
	})
	t.Run("warm-up failure", func(t *testing.T) {
		f := launch(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "DEVICE_IDS": "(0)",
			"FAKE_RUNNER_WARMUP_FAIL": "no weights here", "MAX_WORKER_RESTART_COUNT": "0"}))
		waitFailed(t, f, "0")
		require.Contains(t, workerInfo(t, f)["0"]["last_error"], "fake warm-up failure: no weights here")
		f.sigterm(t)
		require.Equal(t, 0, f.waitExit(t, 10*time.Second))
	})
}

// waitFailed waits until worker id of s has given up (state failed).
func waitFailed(t *testing.T, s *server, id string) {
	t.Helper()
	eventually(t, e2e.WorkerStartLimit, "worker "+id+" failed", func() bool {
		if _, err := tryDo(http.MethodGet, s.URL+"/tt-liveness", nil); err != nil {
			return false
		}
		return workerInfo(t, s)[id]["state"] == "failed"
	})
}

// TestPythonCancelFreesTheWorker: a client that goes away mid-request frees the Python worker
// at the runner's next step, not after the job's remaining steps.
func TestPythonCancelFreesTheWorker(t *testing.T) {
	t.Parallel()
	s := startServer(t, pythonEnv(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.2", "DEVICE_IDS": "(0)"}))
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/image/generations",
		strings.NewReader(`{"prompt":"long","guidance_scale":7.0,"seed":1,"num_inference_steps":50}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", bearer)
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	busyWorker(t, s)
	cancel()
	start := time.Now()
	generate(t, s, "/image/generations", `{"prompt":"next","guidance_scale":7.0,"seed":1,"num_inference_steps":12}`)
	require.Less(t, time.Since(start), 5*time.Second, "the next job did not wait for the cancelled one's 10 s")
}
