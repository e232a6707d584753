package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeServer imitates the media routes: auth, {"images": [...]}, NDJSON streams, and a 429
// for every fifth image request.
type fakeServer struct {
	t        *testing.T
	requests atomic.Int64
	mu       sync.Mutex
	ids      []string
	arrivals []time.Time
	delay    time.Duration
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.arrivals = append(f.arrivals, time.Now())
	f.ids = append(f.ids, r.Header.Get("X-Request-Id"))
	f.mu.Unlock()
	n := f.requests.Add(1)
	time.Sleep(f.delay)
	if r.URL.Path == "/tt-liveness" {
		_, _ = io.WriteString(w, `{"status":"alive"}`)
		return
	}
	if r.Header.Get("Authorization") != "Bearer k" {
		http.Error(w, `{"detail":"bad key"}`, http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/image/generations":
		if n%5 == 0 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"detail":"busy"}`, http.StatusTooManyRequests)
			return
		}
		k := int(req["number_of_images"].(float64))
		imgs := make([]string, k)
		for i := range imgs {
			imgs[i] = "aGVsbG8="
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"images": imgs})
	case "/audio/transcriptions":
		wav, err := base64.StdEncoding.DecodeString(req["file"].(string))
		if err != nil || len(wav) < 44 {
			http.Error(w, "bad audio", http.StatusBadRequest)
			return
		}
		dur := float64(len(wav)-44) / 2 / 16000
		if req["stream"] != true {
			_ = json.NewEncoder(w).Encode(map[string]any{"text": "hi", "duration": dur})
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		fl := w.(http.Flusher)
		time.Sleep(30 * time.Millisecond) // time to first chunk
		_, _ = io.WriteString(w, `{"text": "hi", "chunk_id": 1}`+"\n")
		fl.Flush()
		time.Sleep(30 * time.Millisecond)
		if n%4 == 0 {
			_, _ = io.WriteString(w, `{"detail": "device lost", "status_code": 500}`+"\n")
			return
		}
		_, _ = fmt.Fprintf(w, `{"text": "hi", "task": "transcribe", "duration": %g}`+"\n", dur)
	case "/cnn/search-image":
		_, _ = io.WriteString(w, `[{"label":"cat","probability":0.9}]`)
	default:
		http.NotFound(w, r)
	}
}

func startFake(t *testing.T, delay time.Duration) (*fakeServer, *url.URL) {
	f := &fakeServer{t: t, delay: delay}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	u, err := CheckTarget(ts.URL, false)
	require.NoError(t, err)
	return f, u
}

func workload(t *testing.T, spec WorkloadSpec) *Workload {
	w, err := NewWorkload(spec)
	require.NoError(t, err)
	return w
}

func TestRunClosedLoopImage(t *testing.T) {
	f, u := startFake(t, 2*time.Millisecond)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindImage, Images: 2}), Token: "k",
		Concurrency: 4, Requests: 40, WarmupRequests: 5,
	})
	require.NoError(t, err)
	require.Equal(t, int64(45), f.requests.Load(), "5 warm-up + 40 measured")
	require.Equal(t, 40, rep.Sent)
	// Requests 1..45 overall; every fifth is a 429: 9 in all, 1 of them (#5) in the warm-up.
	require.Equal(t, map[string]int{"200": 32, "429": 8}, rep.Status)
	require.Equal(t, 32, rep.Completed)
	require.Equal(t, 8, rep.Failed)
	require.InDelta(t, 64, rep.Units, 0, "two images per completed request")
	require.Equal(t, "images", rep.UnitName)
	require.Equal(t, 32, rep.Latency.Count)
	require.GreaterOrEqual(t, rep.Latency.Min, 2.0, "the handler sleeps 2 ms")
	require.Positive(t, rep.RequestsPerS)
	require.Nil(t, rep.TTFC)
	require.NotNil(t, rep.Steady, rep.SteadyNote)
	require.LessOrEqual(t, rep.Steady.Completed, rep.Completed)
	require.Less(t, rep.Steady.StartS, rep.Steady.EndS)
	require.LessOrEqual(t, rep.Steady.EndS, rep.DurationS)
	ids := slices.Clone(f.ids)
	require.Contains(t, ids, "bench-warmup-0")
	require.Contains(t, ids, "bench-run-39")
}

func TestRunStreamTTFC(t *testing.T) {
	_, u := startFake(t, 0)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindAudio, AudioSeconds: 0.5, Stream: true}), Token: "k",
		Concurrency: 2, Requests: 8,
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"200": 6, "stream_error:500": 2}, rep.Status)
	require.Equal(t, []string{"device lost"}, rep.Errors)
	require.NotNil(t, rep.TTFC)
	require.Equal(t, 6, rep.TTFC.Count)
	require.GreaterOrEqual(t, rep.TTFC.Min, 30.0)
	require.Less(t, rep.TTFC.Max, rep.Latency.Max)
	require.GreaterOrEqual(t, rep.Latency.Min, 60.0)
	require.InDelta(t, 3.0, rep.Units, 1e-9, "6 × 0.5 audio seconds")
}

func TestRunAuthAndDuration(t *testing.T) {
	_, u := startFake(t, 0)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindCNN}), Token: "wrong",
		Concurrency: 2, Duration: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	require.Positive(t, rep.Sent)
	require.Equal(t, map[string]int{"401": rep.Sent}, rep.Status)
	require.Zero(t, rep.Completed)
	require.Less(t, rep.DurationS, 1.0)

	rep, err = Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}), Concurrency: 1, Requests: 3,
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"200": 3}, rep.Status, "liveness needs no token")
}

func TestRunOpenLoopArrivals(t *testing.T) {
	// Constant 50/s: requests must start every 20 ms however long each takes (100 ms here),
	// so each phase takes about 9·20 + 100 ms, not 10·100 ms.
	f, u := startFake(t, 100*time.Millisecond)
	start := time.Now()
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}),
		Rate: 50, Arrival: ArrivalConstant, Requests: 10, WarmupRequests: 6, // the warm-up opens the connections
	})
	require.NoError(t, err)
	require.Equal(t, 10, rep.Completed)
	require.Equal(t, "open", rep.Mode)
	require.Less(t, time.Since(start), 1200*time.Millisecond)
	f.mu.Lock()
	arr := slices.Clone(f.arrivals[6:])
	f.mu.Unlock()
	slices.SortFunc(arr, func(a, b time.Time) int { return a.Compare(b) })
	require.Len(t, arr, 10)
	// On a busy machine single arrivals can be late, so: the median is on time, and none is
	// late by a response time (which is what waiting for responses would look like).
	offs := make([]float64, len(arr))
	for i, at := range arr {
		off := at.Sub(arr[0]) - time.Duration(i)*20*time.Millisecond
		require.Less(t, off.Abs(), 80*time.Millisecond, "request %d arrived %v off schedule", i, off)
		offs[i] = float64(off.Abs()) / float64(time.Millisecond)
	}
	// Waiting for answers would put the median near 100 ms; 40 ms leaves room for a loaded box.
	require.Less(t, Summarize(offs).P50, 40.0, "median offset from schedule (ms), offsets %v", offs)
}

func TestRunOpenLoopDropsAboveMaxInFlight(t *testing.T) {
	_, u := startFake(t, 300*time.Millisecond)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}),
		Rate: 100, Arrival: ArrivalConstant, Requests: 6, MaxInFlight: 2,
	})
	require.NoError(t, err)
	// Arrivals at 0, 10, ..., 50 ms; the first two are still in flight for all of them.
	require.Equal(t, 2, rep.Sent)
	require.Equal(t, 4, rep.Dropped)
	require.InDelta(t, 2.0/6, float64(rep.Completed)/float64(rep.Sent+rep.Dropped), 1e-9)
}

func TestRunTransportErrors(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
	}))
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}), Concurrency: 1, Requests: 2,
		Timeout: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"error:timeout": 2}, rep.Status)

	ts.Close()
	rep, err = Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}), Concurrency: 1, Requests: 1,
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"error:connect": 1}, rep.Status)
}

func TestRunCancelled(t *testing.T) {
	_, u := startFake(t, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	rep, err := Run(ctx, Config{BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}), Concurrency: 2, Duration: time.Minute})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, rep, "a cancelled run still reports what it measured")
}

func TestRunConfigErrors(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	w := &Workload{}
	for name, cfg := range map[string]Config{
		"no url":      {Workload: w, Concurrency: 1, Requests: 1},
		"no workload": {BaseURL: u, Concurrency: 1, Requests: 1},
		"both loops":  {BaseURL: u, Workload: w, Concurrency: 1, Rate: 1, Requests: 1},
		"no load":     {BaseURL: u, Workload: w, Requests: 1},
		"no bound":    {BaseURL: u, Workload: w, Concurrency: 1},
		"bad arrival": {BaseURL: u, Workload: w, Rate: 1, Requests: 1, Arrival: "bursty"},
	} {
		_, err := Run(t.Context(), cfg)
		require.ErrorIs(t, err, ErrConfig, name)
	}
}

func TestBareHandlerAndCompare(t *testing.T) {
	_, u := startFake(t, 5*time.Millisecond)
	cfg := Config{BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindCNN}), Token: "k", Concurrency: 2, Requests: 20, WarmupRequests: 2}
	canned, err := Record(t.Context(), cfg)
	require.NoError(t, err)
	require.Equal(t, `[{"label":"cat","probability":0.9}]`, string(canned.Body))

	bare := httptest.NewServer(BareHandler(canned))
	defer bare.Close()
	resp, err := http.Post(bare.URL+"/anything", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, canned.Body, got)

	bu, _ := url.Parse(bare.URL)
	cmp, err := Compare(t.Context(), cfg, bu, 2)
	require.NoError(t, err)
	require.Len(t, cmp.Server, 2)
	require.Len(t, cmp.Baseline, 2)
	require.Equal(t, "server #1", cmp.Server[0].Label)
	require.Equal(t, "bare #2", cmp.Baseline[1].Label)
	// The fake sleeps 5 ms per request; the bare handler does not.
	require.Positive(t, cmp.Ratio)
	require.Less(t, cmp.Ratio, 1.0)
	require.InDelta(t, cmp.ServerRPS/cmp.BaselineRPS, cmp.Ratio, 1e-12)

	bad := cfg
	bad.Token = "wrong"
	_, err = Record(t.Context(), bad)
	require.ErrorContains(t, err, "401")
}

func TestSynthInputs(t *testing.T) {
	wav := SynthWAV(0.25, 16000)
	require.Len(t, wav, 44+2*4000)
	require.Equal(t, "RIFF", string(wav[:4]))
	require.Equal(t, "WAVEfmt ", string(wav[8:16]))
	require.Equal(t, "data", string(wav[36:40]))
	j := SynthJPEG(32)
	require.Equal(t, []byte{0xFF, 0xD8}, j[:2])
}

func TestHeaderMs(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"240", 240, true},
		{" 12 ", 12, true},
		{"1.5", 1.5, true},
		{"-3", 0, false},
		{"NaN", 0, false},
		{"+Inf", 0, false},
		{"12ms", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			h := http.Header{}
			if tc.in != "" {
				h.Set(HeaderQueueTime, tc.in)
			}
			got, ok := headerMs(h, HeaderQueueTime)
			require.Equal(t, tc.ok, ok)
			require.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

// TestRunReadsTimingHeaders checks that a run summarizes the X-Queue-Time-Ms and
// X-Device-Time-Ms headers of its completed answers and ignores those of failures.
func TestRunReadsTimingHeaders(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set(HeaderQueueTime, fmt.Sprint(i))
		w.Header().Set(HeaderDeviceTime, "7")
		if i%4 == 0 {
			http.Error(w, `{"detail":"queue full"}`, http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, `{"images":["aGVsbG8="]}`)
	}))
	t.Cleanup(ts.Close)
	u, err := CheckTarget(ts.URL, false)
	require.NoError(t, err)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindImage}), Concurrency: 1, Requests: 8,
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"200": 6, "429": 2}, rep.Status)
	require.NotNil(t, rep.QueueWait)
	require.NotNil(t, rep.DeviceTime)
	// Completed answers were requests 1, 2, 3, 5, 6, 7.
	require.Equal(t, 6, rep.QueueWait.Count)
	require.InDelta(t, 1, rep.QueueWait.Min, 1e-9)
	require.InDelta(t, 7, rep.QueueWait.Max, 1e-9)
	require.InDelta(t, 4, rep.QueueWait.Mean, 1e-9)
	require.InDelta(t, 7, rep.DeviceTime.P99, 1e-9)
}
