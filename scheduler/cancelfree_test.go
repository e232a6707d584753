package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// gatedStepRunner runs steps denoising steps, each when gate yields; one that honours
// cancellation checks its task's context before every step, one that does not runs them all.
type gatedStepRunner struct {
	steps   int
	honour  bool
	gate    chan struct{}
	stepped chan int
}

func (r *gatedStepRunner) Warmup(context.Context) error { return nil }
func (r *gatedStepRunner) Close() error                 { return nil }
func (r *gatedStepRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	t := tasks[0]
	for done := 1; done <= r.steps; done++ {
		<-r.gate
		if r.honour && t.Ctx.Err() != nil {
			return []runners.Outcome{{Err: t.Ctx.Err()}}
		}
		t.Progress(done, r.steps)
		r.stepped <- done
	}
	return []runners.Outcome{{Value: sreq("ok")}}
}

// TestCancelFreedCountsStepsAfterCancel: OnCancelFreed tells how many steps a runner ran on a
// task after it was cancelled — 0 for one that stops at the next step, all the rest for one
// that ignores cancellation — and nothing for a job that was not cancelled.
func TestCancelFreedCountsStepsAfterCancel(t *testing.T) {
	const steps = 5
	for _, tc := range []struct {
		name      string
		honour    bool
		cancel    bool
		wantSteps int
	}{
		{name: "stops at the next step", honour: true, cancel: true, wantSteps: 0},
		{name: "ignores cancellation", honour: false, cancel: true, wantSteps: steps - 1},
		{name: "not cancelled", honour: true, cancel: false, wantSteps: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &gatedStepRunner{steps: steps, honour: tc.honour, gate: make(chan struct{}), stepped: make(chan int, steps)}
			type freed struct {
				steps int
				after time.Duration
			}
			heard := make(chan freed, 1)
			ran := make(chan struct{}, 1)
			s := New(Config{QueueSize: 2, Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}},
				OnCancelFreed: func(_ string, n int, after time.Duration) { heard <- freed{n, after} },
				OnJobDone:     func(string, time.Duration, time.Duration, string) { ran <- struct{}{} },
			}, func(config.DeviceGroup) (runners.Runner, error) { return r, nil })
			s.Start(context.Background())
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			waitFor(t, "ready", s.Ready)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			result := make(chan error, 1)
			go func() { _, err := s.Submit(ctx, sreq("job"), nil); result <- err }()
			r.gate <- struct{}{}
			require.Equal(t, 1, <-r.stepped)
			if tc.cancel {
				cancel()
				require.Error(t, <-result, "a cancelled job is answered at once")
			}
			close(r.gate) // every later step may run
			<-ran         // the runner has returned: the device is free
			if tc.wantSteps < 0 {
				require.NoError(t, <-result)
				select {
				case f := <-heard:
					t.Fatalf("a job that was not cancelled was reported freed after cancel: %+v", f)
				default:
				}
				return
			}
			f := <-heard
			require.Equal(t, tc.wantSteps, f.steps, "steps run after the cancel")
			require.GreaterOrEqual(t, f.after, time.Duration(0))
		})
	}
}
