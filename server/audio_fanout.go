package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// chunksHeader tells how many scheduler jobs a transcription ran as: 1, or the number of
// chunks it was fanned out into.
const chunksHeader = "X-Transcription-Chunks"

// fanoutPlan is the chunking of req when fan-out applies: ALLOW_AUDIO_FANOUT is on, the
// request was pre-processed (VAD chunking on: it has speech segments), and its speech does
// not fit one chunk of 30 s (whisper.MaxChunkSeconds). The chunks are balanced for the pool's
// number of workers (whisper.Split). Otherwise it is nil and the request is one job.
func (s *Server) fanoutPlan(req *runners.AudioRequest) *whisper.Plan {
	if !s.cfg.AllowAudioFanout || len(req.Segments) == 0 {
		return nil
	}
	workers := len(s.pool(runners.ServiceAudio).Sched.Workers())
	plan := whisper.Split(req, s.fanoutChunkSeconds, workers) // 0 s: whisper.MaxChunkSeconds
	if len(plan.Chunks) < 2 {
		return nil
	}
	// As many chunk jobs in flight as the workers can take at once, batches included.
	plan.InFlight = workers * max(1, s.cfg.MaxBatchSize)
	return &plan
}

// transcribe runs one transcription request to its end, fanned out over the workers when
// fanoutPlan says so, as one job otherwise; the answer is the same shape either way (a
// *runners.TranscriptionResult). onChunk, when not nil, gets the streamed chunks, in order,
// on the calling goroutine; when it returns false (the client is gone) transcribe stops
// and returns errStreamWrite. It sets the X-Transcription-Chunks header.
func (s *Server) transcribe(c *gin.Context, req *runners.AudioRequest, onChunk func(runners.Chunk) bool) (runners.Result, error) {
	ctx := c.Request.Context()
	plan := s.fanoutPlan(req)
	if plan == nil {
		c.Header(chunksHeader, "1")
		if onChunk == nil {
			return s.pool(runners.ServiceAudio).Sched.Submit(ctx, req, nil)
		}
		return s.submitStreaming(ctx, runners.ServiceAudio, req, onChunk)
	}
	c.Header(chunksHeader, strconv.Itoa(len(plan.Chunks)))
	// DEFAULT_INFERENCE_TIMEOUT_SECONDS bounds the whole request, as it bounds one job: each
	// chunk job's own timeout starts at its submission, which comes later for later chunks.
	if s.cfg.InferenceTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.cfg.InferenceTimeout,
			fmt.Errorf("%w after %s", scheduler.ErrTimeout, s.cfg.InferenceTimeout))
		defer cancel()
	}
	// The chunks are admitted all or none: as many places as chunks may wait at once are held
	// for the request (and no more chunks than that are submitted at once), so no chunk is
	// refused for a full queue after others ran.
	places := min(len(plan.Chunks), max(plan.InFlight, 1))
	if r, ok := s.pool(runners.ServiceAudio).Sched.(reserver); ok {
		places = min(places, r.MaxReservation())
	}
	plan.InFlight = places
	release, ctx, err := s.reserve(ctx, runners.ServiceAudio, places, "")
	if err != nil {
		return nil, err
	}
	defer release()
	var emit func(runners.Chunk) error
	if onChunk != nil {
		emit = func(ch runners.Chunk) error {
			if !onChunk(ch) {
				return errStreamWrite
			}
			return nil
		}
	}
	res, err := whisper.Run(ctx, s.pool(runners.ServiceAudio).Sched.Submit, *plan, emit)
	if err != nil {
		if errors.Is(err, errStreamWrite) {
			return nil, errStreamWrite
		}
		return nil, err
	}
	return res, nil
}
