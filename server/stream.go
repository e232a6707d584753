package server

import (
	"context"
	"errors"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// submitStreaming: the streamed job every streaming route (image, transcription, speech) runs,
// its chunks handed to the handler goroutine in order.

// errStreamWrite: writing a chunk to the client failed (it went away).
var errStreamWrite = errors.New("stream write failed")

// submitStreaming submits req and hands every streamed chunk to onChunk on the calling
// (handler) goroutine, in order, then returns the job's outcome. When onChunk returns false
// (the client is gone) it waits for the job to end and returns errStreamWrite. Chunks still
// buffered when the job ends are delivered before it returns.
func (s *Server) submitStreaming(ctx context.Context, svc runners.Service, req runners.Request, onChunk func(runners.Chunk) bool) (runners.Result, error) {
	chunks := make(chan runners.Chunk, streamBuffer)
	type final struct {
		v   runners.Result
		err error
	}
	done := make(chan final, 1)
	go func() {
		v, err := s.pool(svc).Sched.Submit(ctx, req, func(ch runners.Chunk) error {
			select {
			case chunks <- ch:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		done <- final{v, err}
	}()
	for {
		select {
		case ch := <-chunks:
			if !onChunk(ch) {
				<-done
				return nil, errStreamWrite
			}
		case f := <-done:
			for {
				select {
				case ch := <-chunks:
					onChunk(ch)
					continue
				default:
				}
				return f.v, f.err
			}
		}
	}
}
