package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/audioenc"
	"github.com/tenstorrent/tt-media-server-go/media/tempo"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// openAIPCMRate is OpenAI's pcm: raw 16-bit samples at 24 kHz.
const openAIPCMRate = 24000

// handleSpeech serves the speech routes (POST /v1/audio/speech in both dialects, the legacy
// path in HEAD's): the dialect's reader fills the one request type (speechJob), and the answer
// takes the dialect's shape. HEAD's TextToSpeechRequest is answered with a whole file (wav,
// mp3, ogg) or HEAD's JSON {audio (base64 WAV), duration, sample_rate, format, speaker_id},
// speaker_id being the speaker actually used (null for a client's embedding).
//
// OpenAI's CreateSpeechRequest is answered as a stream: the audio of each text chunk is encoded
// and flushed as soon as it is vocoded (chunked transfer), or with stream_format "sse" sent as
// speech.audio.delta events (base64 of the next bytes of the encoded stream) and a final
// speech.audio.done with the usage (input_tokens: the SpeechT5 token ids spoken; output_tokens:
// the decoder steps, two mel frames each). An error before the first byte is an ordinary error
// answer; after it, an SSE stream ends with an error event and a binary stream is cut off (the
// connection is aborted, so the client sees an incomplete transfer, never a silently shorter
// file). models answers OpenAI's model names (nil on the legacy path).
func (s *Server) handleSpeech(models *modelTable) handlerFunc {
	return func(c *gin.Context, in *request) {
		if s.speech.loadErr != nil {
			s.fail(c, in.dialect, s.speech.loadErr)
			return
		}
		b, err := in.jsonBody()
		if err != nil {
			s.fail(c, in.dialect, err)
			return
		}
		var job *speechJob
		if in.dialect == dialectOpenAI {
			job, err = parseOpenAISpeech(in.data, b, models, s.speech.voices)
		} else {
			job, err = parsePythonSpeech(b, s.speech.voices)
		}
		if err != nil {
			s.fail(c, in.dialect, err)
			return
		}
		if in.dialect == dialectOpenAI {
			s.streamSpeech(c, job)
			return
		}
		s.answerSpeechFile(c, job)
	}
}

// answerSpeechFile synthesises a HEAD-dialect request whole and answers the file or HEAD's JSON.
func (s *Server) answerSpeechFile(c *gin.Context, job *speechJob) {
	v, err := s.pool(runners.ServiceTextToSpeech).Sched.Submit(c.Request.Context(), job.req, nil)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	res, ok := runners.ResultAs[*runners.SpeechResult](v)
	if !ok || res == nil {
		s.fail(c, dialectPython, fmt.Errorf("speech runner answered %T", v))
		return
	}
	format := job.format
	if job.json {
		format = audioenc.WAV
	}
	var buf bytes.Buffer
	if err := audioenc.Encode(c.Request.Context(), format, &buf, res.Samples, audioenc.Options{Rate: res.SampleRate}); err != nil {
		s.fail(c, dialectPython, fmt.Errorf("encode %s: %w", format, err))
		return
	}
	if job.json {
		var speaker *string
		if res.SpeakerID != "" {
			speaker = &res.SpeakerID
		}
		writeJSON(c, http.StatusOK, struct {
			Audio      string  `json:"audio"`
			Duration   float64 `json:"duration"`
			SampleRate int     `json:"sample_rate"`
			Format     string  `json:"format"`
			SpeakerID  *string `json:"speaker_id"`
		}{base64.StdEncoding.EncodeToString(buf.Bytes()), float64(len(res.Samples)) / float64(res.SampleRate),
			res.SampleRate, "wav", speaker})
		return
	}
	c.Header("Content-Disposition", "attachment; filename=speech."+format)
	c.Data(http.StatusOK, audioenc.ContentType(format), buf.Bytes())
}

// lockedFlusher writes to the response and flushes after every write; the encoder's output
// goroutine and the handler share it.
type lockedFlusher struct {
	mu      sync.Mutex
	c       *gin.Context
	started func()
	write   func(p []byte) error
	err     error
}

func (w *lockedFlusher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.started()
	if err := w.write(p); err != nil {
		w.err = err
		return 0, err
	}
	w.c.Writer.Flush()
	return len(p), nil
}

func (s *Server) streamSpeech(c *gin.Context, job *speechJob) {
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		if job.sse {
			c.Header("Content-Type", "text/event-stream")
			c.Header("Cache-Control", "no-cache")
		} else {
			c.Header("Content-Type", audioenc.ContentType(job.format))
		}
		c.Header("X-Content-Type-Options", "nosniff")
		c.Status(http.StatusOK)
	}
	out := &lockedFlusher{c: c, started: start}
	if job.sse {
		out.write = func(p []byte) error {
			return writeSSE(c.Writer, speechDelta{Type: "speech.audio.delta", Audio: base64.StdEncoding.EncodeToString(p)})
		}
	} else {
		out.write = func(p []byte) error { _, err := c.Writer.Write(p); return err }
	}
	var enc audioenc.Stream
	var stretch *tempo.Stretcher // speed ≠ 1: the samples go through it on their way to enc
	o := audioenc.Options{Rate: 16000}
	if job.format == audioenc.PCM {
		o.OutRate = openAIPCMRate
	}
	onChunk := func(ch runners.Chunk) bool {
		sc, ok := runners.ChunkAs[*runners.SpeechChunk](ch)
		if !ok {
			return true
		}
		if enc == nil {
			o.Rate = sc.SampleRate
			var err error
			if job.speed != 1 {
				if stretch, err = tempo.New(sc.SampleRate, job.speed); err != nil {
					s.log.Error("speech time stretch", "request_id", requestID(c), "err", err)
					return false
				}
			}
			if enc, err = audioenc.New(ctx, job.format, out, o); err != nil {
				s.log.Error("speech encoder", "request_id", requestID(c), "err", err)
				return false
			}
		}
		samples := sc.Samples
		if stretch != nil {
			samples = stretch.Write(samples)
		}
		return enc.Write(samples) == nil
	}
	v, err := s.submitStreaming(ctx, runners.ServiceTextToSpeech, job.req, onChunk)
	var closeErr error
	if enc != nil {
		if stretch != nil && err == nil {
			closeErr = enc.Write(stretch.Flush())
		}
		closeErr = errors.Join(closeErr, enc.Close())
	}
	if err == nil && closeErr != nil {
		err = fmt.Errorf("encode %s: %w", job.format, closeErr)
	}
	switch {
	case errors.Is(err, errStreamWrite) && ctx.Err() != nil:
		return // the client is gone
	case err != nil && !started:
		s.fail(c, dialectOpenAI, err)
		return
	case err != nil:
		c.Error(err) //nolint:errcheck // recorded for the access log
		if job.sse {
			out.mu.Lock()
			_ = writeSSE(c.Writer, map[string]any{"type": "error", "error": s.answerOf(err).object()})
			c.Writer.Flush()
			out.mu.Unlock()
			return
		}
		panic(http.ErrAbortHandler)
	}
	res, _ := runners.ResultAs[*runners.SpeechResult](v)
	if !started { // no chunk streamed (cannot happen with a streaming runner): encode the result
		if res == nil {
			s.fail(c, dialectOpenAI, fmt.Errorf("speech runner answered %T", v))
			return
		}
		samples := res.Samples
		if job.speed != 1 {
			if samples, err = tempo.Stretch(samples, res.SampleRate, job.speed); err != nil {
				s.fail(c, dialectOpenAI, err)
				return
			}
		}
		o.Rate = res.SampleRate
		var buf bytes.Buffer
		if err := audioenc.Encode(ctx, job.format, &buf, samples, o); err != nil {
			s.fail(c, dialectOpenAI, err)
			return
		}
		_, _ = out.Write(buf.Bytes())
	}
	if job.sse {
		u := speechUsage{}
		if res != nil {
			u = speechUsage{InputTokens: res.Tokens, OutputTokens: res.Steps, TotalTokens: res.Tokens + res.Steps}
		}
		out.mu.Lock()
		_ = writeSSE(c.Writer, speechDone{Type: "speech.audio.done", Usage: u})
		c.Writer.Flush()
		out.mu.Unlock()
	}
}

type speechDelta struct {
	Type  string `json:"type"`
	Audio string `json:"audio"`
}

type speechUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type speechDone struct {
	Type  string      `json:"type"`
	Usage speechUsage `json:"usage"`
}

// writeSSE writes one "data:" event.
func writeSSE(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "data: %s\n\n", data)
	return err
}
