package jobs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// gatedStore is a ProgressStore whose every write announces itself on calls and then blocks
// until the test answers it on answers.
type gatedStore struct {
	calls   chan string
	answers chan answer
}

type answer struct {
	ok  bool
	err error
}

func (g *gatedStore) Start(_ context.Context, id string) (bool, error) {
	g.calls <- "start " + id
	a := <-g.answers
	return a.ok, a.err
}

func (g *gatedStore) SetProgress(_ context.Context, id string, percent int) (bool, error) {
	g.calls <- fmt.Sprintf("progress %s %d", id, percent)
	a := <-g.answers
	return a.ok, a.err
}

// TestProgressOffTheCallersGoroutine: Set never waits on the store (every Set below returns
// while the store holds a write), writes only the newest percent, answers a refused or failed
// write at the next Set, and Flush returns only once the last write has landed.
func TestProgressOffTheCallersGoroutine(t *testing.T) {
	errDisk := errors.New("disk I/O error")
	ok := answer{ok: true}
	for _, tc := range []struct {
		name        string
		run         func(t *testing.T, p *Progress, g *gatedStore, landed <-chan struct{})
		wantStarted bool
		wantErr     error
	}{
		{name: "coalesces to the newest percent", wantStarted: true,
			run: func(t *testing.T, p *Progress, g *gatedStore, _ <-chan struct{}) {
				require.NoError(t, p.Set(10))
				require.Equal(t, "start j", <-g.calls) // held by the store
				for _, v := range []int{20, 30, 40} {
					require.NoError(t, p.Set(v), "the step returns while the store holds a write")
				}
				g.answers <- ok
				require.Equal(t, "progress j 40", <-g.calls, "10, 20 and 30 were superseded")
				require.NoError(t, p.Set(50))
				g.answers <- ok
				require.Equal(t, "progress j 50", <-g.calls)
				g.answers <- ok
			}},
		{name: "zero only starts the job", wantStarted: true,
			run: func(t *testing.T, p *Progress, g *gatedStore, _ <-chan struct{}) {
				require.NoError(t, p.Set(0))
				require.Equal(t, "start j", <-g.calls)
				g.answers <- ok
			}},
		{name: "a refused progress stops the next step", wantStarted: true, wantErr: ErrStopped,
			run: func(t *testing.T, p *Progress, g *gatedStore, landed <-chan struct{}) {
				require.NoError(t, p.Set(10))
				require.Equal(t, "start j", <-g.calls)
				g.answers <- ok
				<-landed
				require.Equal(t, "progress j 10", <-g.calls)
				require.NoError(t, p.Set(20), "the refusal has not landed yet")
				g.answers <- answer{ok: false} // cancelled or deleted elsewhere
				<-landed
				require.ErrorIs(t, p.Set(30), ErrStopped)
				require.ErrorIs(t, p.Set(40), ErrStopped, "and every later step")
			}},
		{name: "a refused start stops the next step", wantErr: ErrStopped,
			run: func(t *testing.T, p *Progress, g *gatedStore, landed <-chan struct{}) {
				require.NoError(t, p.Set(0))
				require.Equal(t, "start j", <-g.calls)
				g.answers <- answer{ok: false}
				<-landed
				require.ErrorIs(t, p.Set(10), ErrStopped)
			}},
		{name: "a failed write is the next step's error", wantStarted: true, wantErr: errDisk,
			run: func(t *testing.T, p *Progress, g *gatedStore, landed <-chan struct{}) {
				require.NoError(t, p.Set(10))
				require.Equal(t, "start j", <-g.calls)
				g.answers <- ok
				<-landed
				require.Equal(t, "progress j 10", <-g.calls)
				g.answers <- answer{err: errDisk}
				<-landed
				require.ErrorIs(t, p.Set(20), errDisk)
			}},
		{name: "flush waits for the write in flight", wantStarted: true,
			run: func(t *testing.T, p *Progress, g *gatedStore, _ <-chan struct{}) {
				require.NoError(t, p.Set(99))
				require.Equal(t, "start j", <-g.calls)
				flushed := make(chan struct{})
				go func() { _, _ = p.Flush(); close(flushed) }()
				g.answers <- ok
				require.Equal(t, "progress j 99", <-g.calls)
				select {
				case <-flushed:
					t.Fatal("Flush returned while the last progress write was in flight")
				default:
				}
				g.answers <- ok
				<-flushed
				require.ErrorIs(t, p.Set(100), ErrStopped, "no progress after the final state")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatedStore{calls: make(chan string), answers: make(chan answer)}
			p := NewProgress(context.Background(), g, "j")
			landed := make(chan struct{}, 16)
			p.landed = func() { landed <- struct{}{} }
			tc.run(t, p, g, landed)
			started, err := p.Flush()
			require.Equal(t, tc.wantStarted, started)
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
			}
			require.ErrorIs(t, p.Set(1), ErrStopped, "nothing is written after Flush")
		})
	}
}
