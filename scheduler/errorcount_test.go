package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// crashRunner is a runner in a process of its own (runners.Exiter) that the test kills. Run
// announces each batch on running and holds it until the process is killed (every task then
// fails with runners.ErrDeviceLost, as procrunner fails the jobs of a dead child) or, for a
// "fail"/"bad" request, answers at once with a job error / a bad-request error.
type crashRunner struct {
	gone    chan struct{}
	running chan struct{}
}

var errJob = errors.New("runner: job failed")

func (c *crashRunner) Warmup(context.Context) error    { return nil }
func (c *crashRunner) Close() error                    { return nil }
func (c *crashRunner) Exited() <-chan struct{}         { return c.gone }
func (c *crashRunner) kill()                           { close(c.gone) }
func (c *crashRunner) Probe(ctx context.Context) error { return nil }
func (c *crashRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	switch tasks[0].Request {
	case sreq("fail"):
		for i := range out {
			out[i] = runners.Outcome{Err: errJob}
		}
		return out
	case sreq("bad"):
		for i := range out {
			out[i] = runners.Outcome{Err: fmt.Errorf("%w: bad input", runners.ErrBadRequest)}
		}
		return out
	}
	c.running <- struct{}{}
	<-c.gone
	for i := range out {
		out[i] = runners.Outcome{Err: fmt.Errorf("child exited: %w", runners.ErrDeviceLost)}
	}
	return out
}

// TestErrorCountRule pins what one event adds to a worker's error_count (/tt-liveness,
// tt_media_server_worker_errors_total) and restart_count: a crash counts once however many
// jobs (client jobs or canary probes) it took down — their failures are the crash's, not
// errors of their own; a client job that fails on a live worker counts once and restarts
// nothing; a bad request (4xx) and a canary probe's own miss count nothing (HEAD:
// device_worker._run_canary_probe keeps probe misses out of error_count).
func TestErrorCountRule(t *testing.T) {
	tests := []struct {
		name                     string
		batchDelay               time.Duration // MaxBatchDelay: > 0 to batch jobs together
		event                    func(t *testing.T, s *Scheduler, r *crashRunner)
		wantErrors, wantRestarts int
	}{
		{"idle crash", 0, func(t *testing.T, s *Scheduler, r *crashRunner) {
			r.kill()
		}, 1, 1},
		{"crash with a job in flight", 0, func(t *testing.T, s *Scheduler, r *crashRunner) {
			done := make(chan error, 1)
			go func() { _, err := s.Submit(context.Background(), sreq("x"), nil); done <- err }()
			<-r.running
			r.kill()
			err := <-done
			require.ErrorIs(t, err, ErrWorkerFailed)
			require.ErrorIs(t, err, runners.ErrDeviceLost)
		}, 1, 1},
		{"crash with two jobs in flight", time.Minute, func(t *testing.T, s *Scheduler, r *crashRunner) {
			done := make(chan error, 2)
			for range 2 { // one batch: the worker waits (MaxBatchDelay) until both are queued
				go func() {
					_, err := s.Submit(context.Background(), sreq("x"), nil)
					done <- err
				}()
			}
			<-r.running
			r.kill()
			for range 2 {
				require.ErrorIs(t, <-done, runners.ErrDeviceLost)
			}
		}, 1, 1},
		{"crash with a canary probe in flight", 0, func(t *testing.T, s *Scheduler, r *crashRunner) {
			done := make(chan error, 1)
			go func() {
				_, err := s.submitProbe(context.Background(), sreq("probe"), func() {})
				done <- err
			}()
			<-r.running
			r.kill()
			require.ErrorIs(t, <-done, runners.ErrDeviceLost)
		}, 1, 1},
		{"job error without crash", 0, func(t *testing.T, s *Scheduler, r *crashRunner) {
			_, err := s.Submit(context.Background(), sreq("fail"), nil)
			require.ErrorIs(t, err, errJob)
		}, 1, 0},
		{"bad request", 0, func(t *testing.T, s *Scheduler, r *crashRunner) {
			_, err := s.Submit(context.Background(), sreq("bad"), nil)
			require.ErrorIs(t, err, runners.ErrBadRequest)
		}, 0, 0},
		{"canary probe miss without crash", 0, func(t *testing.T, s *Scheduler, r *crashRunner) {
			_, err := s.submitProbe(context.Background(), sreq("fail"), func() {})
			require.ErrorIs(t, err, errJob)
		}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			made := make(chan *crashRunner, 4)
			s := New(Config{Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}}, QueueSize: 4, MaxRestarts: 3,
				MaxBatchSize: 2, MaxBatchDelay: tc.batchDelay},
				func(config.DeviceGroup) (runners.Runner, error) {
					r := &crashRunner{gone: make(chan struct{}), running: make(chan struct{}, 1)}
					made <- r
					return r, nil
				})
			s.Start(context.Background())
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			first := <-made
			waitFor(t, "ready", s.Ready)
			tc.event(t, s, first)
			waitFor(t, fmt.Sprintf("%d restarts and ready", tc.wantRestarts), func() bool {
				st := s.Workers()["0"]
				return st.RestartCount == tc.wantRestarts && st.IsReady
			})
			st := s.Workers()["0"]
			require.Equal(t, tc.wantErrors, st.ErrorCount, "error_count")
			require.Equal(t, tc.wantRestarts, st.RestartCount, "restart_count")
		})
	}
}
