package scheduler

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// stepRunner reports each step through Task.Progress and waits for a token before the next,
// and for one more before it returns (so the last step's progress can be read while busy).
type stepRunner struct {
	steps int
	next  chan struct{} // one token per step
	at    chan int      // the step just reported
}

func (r *stepRunner) Warmup(context.Context) error { return nil }
func (r *stepRunner) Close() error                 { return nil }
func (r *stepRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	t := tasks[0]
	for done := 1; done <= r.steps; done++ {
		select {
		case <-r.next:
		case <-t.Ctx.Done():
			return []runners.Outcome{{Err: t.Ctx.Err()}}
		}
		if t.Progress == nil {
			return []runners.Outcome{{Err: errors.New("the worker set no Task.Progress")}}
		}
		t.Progress(done, r.steps)
		r.at <- done
	}
	select {
	case <-r.next:
	case <-t.Ctx.Done():
		return []runners.Outcome{{Err: t.Ctx.Err()}}
	}
	return []runners.Outcome{{Value: sreq("ok")}}
}

func TestWorkerStatusShowsStepProgress(t *testing.T) {
	r := &stepRunner{steps: 3, next: make(chan struct{}), at: make(chan int)}
	s := New(Config{QueueSize: 2, Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}}},
		func(config.DeviceGroup) (runners.Runner, error) { return r, nil })
	s.Start(context.Background())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	waitFor(t, "ready", s.Ready)

	status := func() (int, int) { w := s.Workers()["0"]; return w.StepsDone, w.StepsTotal }
	done, total := status()
	require.Zero(t, done+total, "an idle worker shows no progress")

	result := make(chan error, 1)
	go func() { _, err := s.Submit(context.Background(), sreq("job"), nil); result <- err }()
	for step := 1; step <= r.steps; step++ {
		r.next <- struct{}{}
		select {
		case got := <-r.at:
			require.Equal(t, step, got)
		case err := <-result:
			t.Fatalf("job ended before step %d: %v", step, err)
		}
		done, total = status()
		require.Equal(t, [2]int{step, r.steps}, [2]int{done, total})
	}
	r.next <- struct{}{} // let the job finish
	require.NoError(t, <-result)
	waitFor(t, "the worker to go idle", func() bool { d, tot := status(); return d == 0 && tot == 0 })
}
