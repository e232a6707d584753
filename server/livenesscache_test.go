package server

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// stepSched is a scheduler whose worker state the test changes between liveness polls.
type stepSched struct {
	fakeSched
	mu    sync.Mutex
	state scheduler.WorkerStatus
}

func (s *stepSched) Workers() map[string]scheduler.WorkerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	st.Devices = append([]int(nil), s.state.Devices...)
	return map[string]scheduler.WorkerStatus{"0": st}
}

func (s *stepSched) set(f func(*scheduler.WorkerStatus)) {
	s.mu.Lock()
	f(&s.state)
	s.mu.Unlock()
}

// TestLivenessCacheFollowsEveryChange: the cached /tt-liveness answer is reused while nothing
// changed and rebuilt at once when any reported field does (progress, state, error, devices,
// readiness).
func TestLivenessCacheFollowsEveryChange(t *testing.T) {
	f := &stepSched{fakeSched: fakeSched{ready: true}, state: scheduler.WorkerStatus{IsReady: true, IsAlive: true, State: "ready", Devices: []int{0}}}
	h := New(Deps{Settings: testSettings(), Service: runners.ServiceImage, Sched: f}).Handler()
	get := func() (int, string) {
		w := do(h, http.MethodGet, "/tt-liveness", "", "", nil)
		return w.Code, w.Body.String()
	}
	code, first := get()
	require.Equal(t, http.StatusOK, code)
	_, again := get()
	require.Equal(t, first, again)
	prev := first
	for _, tc := range []struct {
		name   string
		change func(*scheduler.WorkerStatus)
		want   string
	}{
		{"progress", func(w *scheduler.WorkerStatus) { w.StepsDone, w.StepsTotal = 3, 20 }, `"progress":{"done":3,"total":20}`},
		{"next step", func(w *scheduler.WorkerStatus) { w.StepsDone = 4 }, `"progress":{"done":4,"total":20}`},
		{"error", func(w *scheduler.WorkerStatus) { w.ErrorCount, w.LastError = 1, "device lost" }, `"last_error":"device lost"`},
		{"state", func(w *scheduler.WorkerStatus) { w.State = "restarting" }, `"state":"restarting"`},
		{"devices", func(w *scheduler.WorkerStatus) { w.Devices = []int{0, 1} }, `"devices":[0,1]`},
		{"restarts", func(w *scheduler.WorkerStatus) { w.RestartCount = 2 }, `"restart_count":2`},
	} {
		f.set(tc.change)
		code, body := get()
		require.Equal(t, http.StatusOK, code, tc.name)
		require.NotEqual(t, prev, body, tc.name)
		require.Contains(t, body, tc.want, tc.name)
		prev = body
	}
	f.ready = false
	code, body := get()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, `"model_ready":false`)
	f.ready = true
	code, _ = get()
	require.Equal(t, http.StatusOK, code)
}
