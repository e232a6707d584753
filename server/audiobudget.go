package server

import (
	"context"
	"net/http"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// audioReservation is one audio upload's hold on AUDIO_MEMORY_BUDGET_BYTES (Server.audioMem):
// the decoder asks it for memory before decoding samples (audio.Limits.Reserve, from the
// container's frame count, and again if a decode outgrows it); once decoded it shrinks to the
// samples the request keeps, held until the answer (they wait in the queue).
type audioReservation struct {
	b   *memBudget
	ctx context.Context

	mu   sync.Mutex
	held int64
}

// reserveAudio starts an upload's reservation (nothing held yet).
func (s *Server) reserveAudio(ctx context.Context) *audioReservation {
	return &audioReservation{b: s.audioMem, ctx: ctx}
}

// audioRequest decodes and checks the upload and builds the runner's request. The decode's
// memory is reserved from AUDIO_MEMORY_BUDGET_BYTES as it is decoded, then held for the
// samples the request keeps: call release once it is answered (also after an error).
func (s *Server) audioRequest(ctx context.Context, up *transcription) (_ *runners.AudioRequest, release func(), err error) {
	res := s.reserveAudio(ctx)
	req, err := s.decodeAudio(ctx, up, res.reserve)
	if err != nil {
		res.release()
		return nil, func() {}, err
	}
	res.shrinkTo(4*int64(len(req.Samples)) + 16*int64(len(req.Segments)))
	return req, res.release, nil
}

// reserve adds n bytes: 413 naming the setting when the upload alone would need more than the
// whole budget, else a wait for room (429 after imageBudgetWait).
func (r *audioReservation) reserve(n int64) error {
	r.mu.Lock()
	held := r.held
	r.mu.Unlock()
	if held+n > r.b.total {
		return httpErr(http.StatusRequestEntityTooLarge, "decoding this audio needs about %d MiB of memory, over AUDIO_MEMORY_BUDGET_BYTES (%d MiB); send a shorter or smaller file",
			(held+n+1<<20-1)>>20, r.b.total>>20)
	}
	if _, err := r.b.acquire(r.ctx, n); err != nil { // released by shrinkTo, not by acquire's func
		return err
	}
	r.mu.Lock()
	r.held += n
	r.mu.Unlock()
	return nil
}

// shrinkTo gives back all but n bytes.
func (r *audioReservation) shrinkTo(n int64) {
	r.mu.Lock()
	give := r.held - max(n, 0)
	if give > 0 {
		r.held -= give
	}
	r.mu.Unlock()
	if give > 0 {
		r.b.release(give)
	}
}

// release gives back everything (safe to call more than once).
func (r *audioReservation) release() { r.shrinkTo(0) }
