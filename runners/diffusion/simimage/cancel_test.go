package simimage

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// TestRunningDiffusionStopsWithinOneStep: a client that disconnects while its image is being
// denoised frees the worker within one denoising step, through the real scheduler, and the
// worker then serves the next job.
func TestRunningDiffusionStopsWithinOneStep(t *testing.T) {
	const step = 150 * time.Millisecond
	s := scheduler.New(scheduler.Config{Groups: []config.DeviceGroup{{ID: "0"}}, QueueSize: 4, Timeout: time.Minute},
		func(config.DeviceGroup) (runners.Runner, error) {
			return New(catalogue.RunnerSDXL, 64, simdev.Latency{PerStep: step}), nil
		})
	s.Start(context.Background())
	defer func() { require.NoError(t, s.Stop(context.Background())) }()
	require.Eventually(t, s.Ready, 5*time.Second, 5*time.Millisecond)

	seed := int64(1)
	req := &runners.ImageRequest{Prompt: "a", GuidanceScale: 5, NumInferenceSteps: 20, Seed: &seed} // 3 s of work
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := s.Submit(ctx, req, nil); done <- err }()
	// Cancelled in step 4, once the worker reports 3 steps done (a sleep could end before the
	// job even started on a loaded machine, or after it ran on).
	require.Eventually(t, func() bool { return s.Workers()["0"].StepsDone >= 3 }, 30*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	// The worker is free again within one step of the disconnect: a 1-step-long job queued now
	// finishes well before the 16 remaining steps of the cancelled job could have run.
	cancelled := time.Now()
	short := &runners.ImageRequest{Prompt: "b", GuidanceScale: 5, NumInferenceSteps: 12, Seed: &seed}
	_, err := s.Submit(context.Background(), short, nil)
	require.NoError(t, err)
	freeAfter := time.Since(cancelled) - 12*step
	t.Logf("worker free %s after the disconnect (one step = %s)", freeAfter.Round(time.Millisecond), step)
	// Had the cancelled job run on, its 16 remaining steps (2.4 s) would come first. The bound
	// leaves room for a loaded machine's sleep overshoot; the measured value is logged.
	require.Less(t, freeAfter, 8*step, "the running job must stop at a step boundary, not run on")
	require.Equal(t, int64(1), s.Stats().CancelledRunning)
}
