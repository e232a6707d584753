package simdev

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLatencyFrom(t *testing.T) {
	require.Equal(t, Latency{}, LatencyFrom(nil))
	s := &config.Settings{MockWarmup: time.Second, MockStepLatency: 2 * time.Millisecond, MockAudioLatency: 3 * time.Millisecond, MockImageLatency: 4 * time.Millisecond}
	require.Equal(t, Latency{Warmup: time.Second, PerStep: 2 * time.Millisecond, PerAudioSec: 3 * time.Millisecond, PerImage: 4 * time.Millisecond}, LatencyFrom(s))
}

// ireq is a test request (and result) numbered by an int.
type ireq int

func (ireq) Service() runners.Service { return "" }

func TestRunBatchIsolation(t *testing.T) {
	boom := errors.New("boom")
	tasks := []runners.Task{{Ctx: context.Background(), Request: ireq(0)}, {Request: ireq(1)}, {Ctx: context.Background(), Request: ireq(2)}}
	out := RunBatch(context.Background(), tasks, func(ctx context.Context, task runners.Task) (runners.Result, error) {
		switch task.Request.(ireq) {
		case 0:
			panic("device on fire")
		case 1:
			return nil, boom
		}
		return ireq(7), ctx.Err()
	})
	require.Len(t, out, 3)
	require.ErrorContains(t, out[0].Err, "device on fire")
	require.ErrorIs(t, out[1].Err, boom)
	require.NoError(t, out[2].Err)
	require.Equal(t, ireq(7), out[2].Value)

	// The batch context reaches every task.
	batch, cancel := context.WithCancel(context.Background())
	cancel()
	out = RunBatch(batch, tasks[2:], func(ctx context.Context, task runners.Task) (runners.Result, error) {
		return nil, ctx.Err()
	})
	require.ErrorIs(t, out[0].Err, context.Canceled)
}

func TestSleep(t *testing.T) {
	require.NoError(t, Sleep(context.Background(), 0))
	require.NoError(t, Sleep(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	require.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	require.ErrorIs(t, Sleep(ctx, 0), context.Canceled)
	require.Less(t, time.Since(start), time.Second)
}
