//go:build cgo

package whisperrunner

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// lateContext has ended, but what context.AfterFunc registers on it never runs: the moment, on
// a loaded machine, before the goroutine AfterFunc starts is scheduled (a test double; a real
// context's Done is closed by then).
type lateContext struct{ context.Context }

func (lateContext) Err() error { return context.Canceled }

// A batch context that has already ended ends every task before its first window, on the
// one-at-a-time and the batched paths, however late AfterFunc's goroutine runs: under load the
// whole file was transcribed (as TestRunnerCancel's last check in runners/diffusion/diffusionrunner saw).
func TestEndedBatchDecodesNoWindow(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprintf("batch %d", size), func(t *testing.T) {
			r := newRunner(t, func(c *Config) { c.MaxBatchSize = size })
			for i, bctx := range []context.Context{lateContext{context.Background()}, ended, ended, ended} {
				windows := make([]int, size)
				tasks := make([]runners.Task, size)
				for k := range tasks {
					tasks[k] = runners.Task{Ctx: context.Background(), Progress: func(int, int) { windows[k]++ },
						Request: &runners.AudioRequest{Samples: make([]float32, 16000), SampleRate: 16000, Duration: 1, Language: "en"}}
				}
				out := r.Run(bctx, tasks)
				for k, o := range out {
					require.ErrorIs(t, o.Err, context.Canceled, "run %d, task %d", i, k)
					require.Zero(t, windows[k], "run %d, task %d: a window was decoded after the batch context ended", i, k)
				}
			}
		})
	}
}
