package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/bench"
)

// imageServer answers /image/generations with number_of_images images after checking the key.
func imageServer(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct {
			N int `json:"number_of_images"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/image/generations" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"images": make([]string, req.N)})
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestCLIRunSweepAndTargets(t *testing.T) {
	ts := imageServer(t)
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.json")
	require.NoError(t, os.WriteFile(targets, []byte(`{"m": {"d": [
		{"workload": {"kind": "image"}, "concurrency": 2, "targets": {"x": {"success_rate": 1, "units_per_s": 1}}, "source": "test"},
		{"workload": {"kind": "image"}, "concurrency": 1, "targets": {"x": {"latency_p99_ms": 0.000001}}, "source": "test"}
	]}}`), 0o644))
	out := filepath.Join(dir, "out")

	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "--url", ts.URL, "--token", "k", "--kind", "image", "--images", "3",
		"--concurrency", "1,2", "--requests", "10", "--warmup-requests", "2", "--out", out,
		"--targets", targets, "--model", "m", "--device", "d"}, &stdout, &stderr)
	// c=1 cannot meet a 1 ns p99, so the run fails its targets; c=2 passes its own.
	require.ErrorIs(t, err, errFailedTargets)
	s := stdout.String()
	require.Contains(t, s, "| c=1 | image x3 | c=1 | 10 | 10 | 0 | 200:10 |")
	require.Contains(t, s, "| c=2 | image x3 | c=2 | 10 | 10 | 0 | 200:10 |")
	require.Contains(t, s, "| c=2 | x | success_rate | 1 | 1 | 1 | PASS |")
	require.Contains(t, s, "| c=1 | x | latency_p99_ms |")
	require.Contains(t, s, "FAIL |")

	files, err := filepath.Glob(filepath.Join(out, "bench_image_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	md, err := os.ReadFile(filepath.Join(out, "sweep.md"))
	require.NoError(t, err)
	require.Contains(t, s, string(md))
	f, err := os.Open(files[0])
	require.NoError(t, err)
	rep, err := bench.ReadJSON(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, 10, rep.Completed)
	require.InDelta(t, 30, rep.Units, 0)

	// check re-reads the saved reports: only the c=2 entry is given, and it passes.
	stdout.Reset()
	pass := filepath.Join(dir, "pass.json")
	require.NoError(t, os.WriteFile(pass, []byte(`{"m": {"d": [
		{"workload": {"kind": "image"}, "targets": {"x": {"success_rate": 1}}, "source": "test"}]}}`), 0o644))
	require.NoError(t, run(t.Context(), append([]string{"check", "--targets", pass, "--model", "m", "--device", "d"}, files...), &stdout, &stderr))
	require.Equal(t, 2, strings.Count(stdout.String(), "PASS"))

	// report re-renders the same table from the saved JSON.
	stdout.Reset()
	require.NoError(t, run(t.Context(), append([]string{"report"}, files...), &stdout, &stderr))
	require.Equal(t, string(md), stdout.String())
}

func TestCLIOpenLoopAndErrors(t *testing.T) {
	ts := imageServer(t)
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"run", "--url", ts.URL, "--token", "k", "--rate", "200",
		"--arrival", "constant", "--requests", "5"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "| rate=200 | image | rate=200/s constant | 5 | 5 | 0 | 200:5 |")

	for name, args := range map[string][]string{
		"remote":       {"run", "--url", "http://192.0.2.1:8000", "--concurrency", "1", "--requests", "1"},
		"both loops":   {"run", "--url", ts.URL, "--concurrency", "1", "--rate", "2", "--requests", "1"},
		"no bound":     {"run", "--url", ts.URL, "--concurrency", "1"},
		"bad kind":     {"run", "--url", ts.URL, "--kind", "hologram", "--concurrency", "1", "--requests", "1"},
		"video steps":  {"run", "--url", ts.URL, "--kind", "video", "--steps", "3", "--concurrency", "1", "--requests", "1"},
		"bad conc":     {"run", "--url", ts.URL, "--concurrency", "0", "--requests", "1"},
		"no command":   {},
		"unknown":      {"frobnicate"},
		"remote bare":  {"bare", "--listen", "0.0.0.0:0", "--url", ts.URL},
		"compare many": {"compare", "--url", ts.URL, "--baseline-url", ts.URL, "--concurrency", "1,2", "--requests", "1"},
	} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		require.Error(t, err, name)
	}
	err := run(t.Context(), []string{"run", "--url", "http://192.0.2.1:8000", "--concurrency", "1", "--requests", "1"}, io.Discard, io.Discard)
	require.ErrorIs(t, err, bench.ErrRemoteTarget)
}

func TestCLICompare(t *testing.T) {
	ts := imageServer(t)
	canned := &bench.Canned{Status: 200, ContentType: "application/json", Body: []byte(`{"images":[""]}`)}
	bare := httptest.NewServer(bench.BareHandler(canned))
	defer bare.Close()
	var stdout bytes.Buffer
	out := t.TempDir()
	require.NoError(t, run(t.Context(), []string{"compare", "--url", ts.URL, "--baseline-url", bare.URL, "--token", "k",
		"--concurrency", "2", "--requests", "20", "--rounds", "1", "--out", out}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "| c=2 server #1 |")
	require.Contains(t, stdout.String(), "| c=2 bare #1 |")
	require.Regexp(t, `server [0-9.]+ req/s, bare [0-9.]+ req/s, ratio [0-9.]+ \(image, c=2\)`, stdout.String())
	data, err := os.ReadFile(filepath.Join(out, "compare.json"))
	require.NoError(t, err)
	var cmp bench.Comparison
	require.NoError(t, json.Unmarshal(data, &cmp))
	require.Positive(t, cmp.Ratio)
	require.Equal(t, 20, cmp.Server[0].Completed)
	require.Equal(t, 20, cmp.Baseline[0].Completed)
}

// speechServer answers /v1/audio/speech with one second of 24 kHz pcm in two flushed pieces,
// after checking that the request is OpenAI's pcm speech request of the asked words.
func speechServer(t *testing.T, words int) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model, Input, Voice string
			Format              string `json:"response_format"`
		}
		if r.URL.Path != "/v1/audio/speech" || r.Header.Get("Authorization") != "Bearer k" ||
			json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "tts-1" || req.Voice != "ash" ||
			req.Format != "pcm" || len(strings.Fields(req.Input)) != words {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "audio/pcm")
		pcm := make([]byte, 2*24000)
		_, _ = w.Write(pcm[:4800])
		w.(http.Flusher).Flush()
		_, _ = w.Write(pcm[4800:])
	}))
	t.Cleanup(ts.Close)
	return ts
}

// The speech workload reports the time to first audio (TTFC) and each request's real-time
// factor: the audio seconds counted from the pcm bytes over the request's wall time.
func TestCLISpeech(t *testing.T) {
	ts := speechServer(t, 200)
	out := t.TempDir()
	var stdout bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"run", "--url", ts.URL, "--token", "k", "--kind", "speech", "--words", "200",
		"--voice", "ash", "--concurrency", "1", "--requests", "4", "--out", out}, &stdout, io.Discard))
	s := stdout.String()
	require.Contains(t, s, "| c=1 | speech 200w | c=1 | 4 | 4 | 0 | 200:4 |")
	require.Contains(t, s, "| RTF p50 | RTF min |")
	files, err := filepath.Glob(filepath.Join(out, "bench_speech_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	f, err := os.Open(files[0])
	require.NoError(t, err)
	rep, err := bench.ReadJSON(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, "audio_s", rep.UnitName)
	require.InDelta(t, 4, rep.Units, 1e-9, "one second of audio per answer")
	require.NotNil(t, rep.TTFC)
	require.Equal(t, 4, rep.TTFC.Count)
	require.LessOrEqual(t, rep.TTFC.Min, rep.Latency.Min)
	require.NotNil(t, rep.RTF)
	require.Equal(t, 4, rep.RTF.Count)
	// RTF = 1 s / latency: the slowest request has the lowest factor, the fastest the highest.
	require.InEpsilon(t, 1000/rep.Latency.Max, rep.RTF.Min, 1e-9)
	require.InEpsilon(t, 1000/rep.Latency.Min, rep.RTF.Max, 1e-9)

	// A refused request counts as failed, with no audio.
	var refused bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"run", "--url", ts.URL, "--token", "k", "--kind", "speech", "--words", "20",
		"--voice", "ash", "--concurrency", "1", "--requests", "2"}, &refused, io.Discard))
	require.Contains(t, refused.String(), "| c=1 | speech 20w | c=1 | 2 | 0 | 2 | 400:2 |")
}

// videoJobServer imitates HEAD's video job routes: POST /v1/videos/generations answers 202
// with a queued job; each GET of the job moves it on: queued, in_progress at progress 0,
// in_progress at 99 (the device's last step), completed.
func videoJobServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	polls := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/v1/videos/generations" {
			var req struct {
				Steps int `json:"num_inference_steps"`
			}
			if json.NewDecoder(r.Body).Decode(&req) != nil || req.Steps != 6 {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			id := "video_" + strconv.Itoa(len(polls))
			polls[id] = 0
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "status": "queued"})
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/videos/generations/")
		n, ok := polls[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		polls[id] = n + 1
		states := []struct {
			s string
			p int
		}{{"queued", 0}, {"in_progress", 0}, {"in_progress", 99}, {"completed", 100}}
		st := states[min(n, len(states)-1)]
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "status": st.s, "progress": st.p})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// The video workload in open loop: jobs submitted at the arrival rate and each followed to
// completed; the table gives the queue wait, device time and finish time (last step →
// completed) columns and the JSON their summaries.
func TestCLIVideoOpenLoop(t *testing.T) {
	ts := videoJobServer(t)
	out := t.TempDir()
	var stdout bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"run", "--url", ts.URL, "--token", "k", "--kind", "video", "--steps", "6",
		"--poll", "1ms", "--rate", "500", "--arrival", "constant", "--requests", "6", "--out", out}, &stdout, io.Discard))
	s := stdout.String()
	require.Contains(t, s, "| rate=500 | video | rate=500/s constant | 6 | 6 | 0 | 202:6 |")
	require.Contains(t, s, "| queue p50 | queue p99 | device p50 | finish p50 | finish p99 |")
	files, err := filepath.Glob(filepath.Join(out, "bench_video_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	f, err := os.Open(files[0])
	require.NoError(t, err)
	rep, err := bench.ReadJSON(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, "open", rep.Mode)
	require.Equal(t, "jobs", rep.UnitName)
	require.InDelta(t, 6, rep.Units, 0)
	for name, sum := range map[string]*bench.Summary{"queue": rep.QueueWait, "device": rep.DeviceTime, "finish": rep.Finish} {
		require.NotNil(t, sum, name)
		require.Equal(t, 6, sum.Count, name)
		require.Positive(t, sum.Min, name)
	}
	require.LessOrEqual(t, rep.Latency.P95, rep.Latency.Max)
}
