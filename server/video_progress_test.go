package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// heldProgressStore holds the first progress write until gate is closed and records every
// progress percent written.
type heldProgressStore struct {
	jobs.Store
	gate    chan struct{}
	mu      sync.Mutex
	written []int
}

func (s *heldProgressStore) SetProgress(ctx context.Context, id string, percent int) (bool, error) {
	<-s.gate
	s.mu.Lock()
	s.written = append(s.written, percent)
	s.mu.Unlock()
	return s.Store.SetProgress(ctx, id, percent)
}

// submitSpy tells when the scheduler's Submit returns, i.e. the device has run every step.
type submitSpy struct {
	Scheduler
	returned chan struct{}
}

func (s *submitSpy) Submit(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
	res, err := s.Scheduler.Submit(ctx, req, emit)
	s.returned <- struct{}{}
	return res, err
}

// TestVideoProgressDoesNotHoldTheDevice: with the job store holding the first progress write,
// the device still runs every step (its progress callback never waits on the store); once the
// store answers only the newest progress is written, and the job completes at 100 with no
// late progress after it.
func TestVideoProgressDoesNotHoldTheDevice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps int
	}{
		{name: "five steps", steps: 5},
		{name: "twenty steps", steps: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
			held := &heldProgressStore{Store: e.store, gate: make(chan struct{})}
			spy := &submitSpy{Scheduler: e.srv.video.runner.sched, returned: make(chan struct{}, 1)}
			e.srv.video.runner.store, e.srv.video.runner.sched = held, spy
			_, job := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "held", "num_inference_steps": tc.steps})
			id, _ := job["id"].(string)
			require.NotEmpty(t, id, job)
			select {
			case <-spy.returned:
			case <-time.After(60 * time.Second):
				t.Fatal("the device waited for the held progress write")
			}
			close(held.gate)
			require.Equal(t, jobs.Completed, e.wait(t))
			held.mu.Lock()
			written := append([]int(nil), held.written...)
			held.mu.Unlock()
			require.NotEmpty(t, written)
			require.LessOrEqual(t, len(written), 2, "the one held write, then only the newest: %v", written)
			require.Equal(t, 99, written[len(written)-1], "the last step's progress")
			j, err := e.store.Get(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, jobs.Completed, j.Status)
			require.Equal(t, 100, j.Progress, "no late progress after completion")
		})
	}
}

// wroteStore tells each progress write the store accepted.
type wroteStore struct {
	jobs.Store
	wrote chan int
}

func (s *wroteStore) SetProgress(ctx context.Context, id string, percent int) (bool, error) {
	ok, err := s.Store.SetProgress(ctx, id, percent)
	if ok {
		select {
		case s.wrote <- percent:
		default:
		}
	}
	return ok, err
}

// TestVideoCancelledElsewhereStops: a job cancelled in the store by someone else (another
// replica; no local stop) is stopped at the step after its next progress write is refused,
// long before its 50 steps, with nothing written.
func TestVideoCancelledElsewhereStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete bool
	}{
		{name: "cancelled"},
		{name: "deleted", delete: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newVideoEnv(t, catalogue.RunnerWan22, 200*time.Millisecond, nil)
			w := &wroteStore{Store: e.store, wrote: make(chan int, 1)}
			e.srv.video.runner.store = w
			_, job := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "elsewhere", "num_inference_steps": 50})
			id, _ := job["id"].(string)
			require.NotEmpty(t, id, job)
			<-w.wrote // running, with progress stored
			start := time.Now()
			var err error
			if tc.delete {
				_, err = e.store.Delete(context.Background(), id)
			} else {
				_, err = e.store.Cancel(context.Background(), id)
			}
			require.NoError(t, err)
			st := e.wait(t)
			require.Less(t, time.Since(start), 5*time.Second, "stopped within a few steps, not after 50 × 200 ms")
			if tc.delete {
				require.Empty(t, st, "the job is gone")
			} else {
				require.Equal(t, jobs.Cancelled, st)
			}
			j, err := e.store.Get(context.Background(), id)
			if tc.delete {
				require.ErrorIs(t, err, jobs.ErrNotFound)
			} else {
				require.NoError(t, err)
				require.Equal(t, jobs.Cancelled, j.Status)
			}
		})
	}
}
