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
// moves it one state on (queued, queued, in_progress at progress 0, 50 and 99, then completed
// at 100), except job 2, which fails, and job 3, whose progress goes from 50 to completed (no
// poll sees its last step).
type fakeJobs struct {
	mu    sync.Mutex
	polls map[string]int
	doom  map[string]bool
	quick map[string]bool
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
		if f.quick == nil {
			f.quick = map[string]bool{}
		}
		f.quick[id] = strings.Contains(req.Prompt, "job 3:")
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
	status, progress := "completed", 100
	switch {
	case n < 2:
		status, progress = "queued", 0
	case n == 4 && f.quick[id]:
	case n < 5:
		status, progress = "in_progress", []int{0, 50, 99}[n-2]
	case f.doom[id]:
		status, progress = "failed", 99
	}
	_, _ = fmt.Fprintf(w, `{"id":%q,"status":%q,"progress":%d}`, id, status, progress)
}

// TestVideoWorkloadFollowsJobs: each request of the video workload is a job submitted and
// polled to its end; completed jobs count one unit with a queue wait (until in_progress) and a
// device time (in_progress to the last step's progress 99) and a finish time (then to
// completed) that add up to the latency; a job whose last step no poll saw has its device time
// to completed and no finish time; a failed job is an error.
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
	require.NotNil(t, rep.Finish)
	require.Equal(t, 2, rep.Finish.Count, "job 3's last step was not seen: no finish time")
	require.LessOrEqual(t, rep.QueueWait.Min+rep.DeviceTime.Min+rep.Finish.Min, rep.Latency.Max)
	require.Positive(t, rep.Finish.Min)
	require.Equal(t, []float64{8, 8, 8, 8}, f.steps)

	_, err = NewWorkload(WorkloadSpec{Kind: KindVideo, Steps: 3})
	require.ErrorIs(t, err, ErrConfig)
}
