package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeJobs imitates the video job routes: POST answers 202 and a queued job; each GET of a job
// moves it one state on (queued, queued, in_progress × 3, then completed), except a job whose
// prompt says "doomed", which fails.
type fakeJobs struct {
	mu    sync.Mutex
	polls map[string]int
	doom  map[string]bool
	steps []float64
}

func (f *fakeJobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer k" {
		http.Error(w, `{"detail":"bad key"}`, http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodPost && r.URL.Path == "/v1/videos/generations" {
		var req struct {
			Prompt string  `json:"prompt"`
			Steps  float64 `json:"num_inference_steps"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || req.Prompt == "" {
			http.Error(w, `{"detail":"bad body"}`, http.StatusUnprocessableEntity)
			return
		}
		id := fmt.Sprintf("video_%d", len(f.polls))
		f.polls[id] = 0
		f.doom[id] = strings.Contains(req.Prompt, "job 2:")
		f.steps = append(f.steps, req.Steps)
		w.WriteHeader(http.StatusAccepted)
		_, _ = fmt.Fprintf(w, `{"id":%q,"status":"queued"}`, id)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/v1/videos/generations/")
	n, ok := f.polls[id]
	if r.Method != http.MethodGet || !ok {
		http.Error(w, `{"detail":"Video job not found"}`, http.StatusNotFound)
		return
	}
	f.polls[id] = n + 1
	status := "completed"
	switch {
	case n < 2:
		status = "queued"
	case n < 5:
		status = "in_progress"
	case f.doom[id]:
		status = "failed"
	}
	_, _ = fmt.Fprintf(w, `{"id":%q,"status":%q}`, id, status)
}

// TestVideoWorkloadFollowsJobs: each request of the video workload is a job submitted and
// polled to its end; completed jobs count one unit with a queue wait (until in_progress) and a
// device time (in_progress to completed) that add up to the latency; a failed job is an error.
func TestVideoWorkloadFollowsJobs(t *testing.T) {
	f := &fakeJobs{polls: map[string]int{}, doom: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	w, err := NewWorkload(WorkloadSpec{Kind: KindVideo, Steps: 8, Poll: time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, "jobs", w.UnitName)
	rep, err := Run(context.Background(), Config{BaseURL: base, Workload: w, Token: "k", Concurrency: 2, Requests: 4})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Sent)
	require.Equal(t, 3, rep.Completed)
	require.Equal(t, 1, rep.Failed)
	require.Equal(t, map[string]int{"202": 3, "job:failed": 1}, rep.Status)
	require.Len(t, rep.Errors, 1)
	require.Contains(t, rep.Errors[0], "ended failed")
	require.InDelta(t, 3, rep.Units, 0)
	require.NotNil(t, rep.QueueWait)
	require.NotNil(t, rep.DeviceTime)
	require.Equal(t, 3, rep.QueueWait.Count)
	require.Equal(t, 3, rep.DeviceTime.Count)
	require.LessOrEqual(t, rep.QueueWait.P50+rep.DeviceTime.P50, rep.Latency.Max*1.01)
	require.Equal(t, []float64{8, 8, 8, 8}, f.steps)

	_, err = NewWorkload(WorkloadSpec{Kind: KindVideo, Steps: 3})
	require.ErrorIs(t, err, ErrConfig)
}
