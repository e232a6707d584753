package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// OpenAI's image stream event types.
const (
	eventPartialImage   = "image_generation.partial_image"
	eventImageCompleted = "image_generation.completed"
	eventError          = "error"
)

// openAIImageEvent is OpenAI's ImageGenPartialImageEvent (PartialImageIndex set) and
// ImageGenCompletedEvent (Usage set). ImageIndex is our extension, sent only when n > 1: it
// says which of the request's images an event belongs to, which OpenAI's events leave out.
type openAIImageEvent struct {
	Type              string            `json:"type"`
	B64JSON           string            `json:"b64_json"`
	PartialImageIndex *int              `json:"partial_image_index,omitempty"`
	ImageIndex        *int              `json:"image_index,omitempty"`
	Background        string            `json:"background"`
	CreatedAt         int64             `json:"created_at"`
	OutputFormat      string            `json:"output_format"`
	Quality           string            `json:"quality"`
	Size              string            `json:"size"`
	Usage             *openAIImageUsage `json:"usage,omitempty"`
}

// openAIImageUsage is the completed event's usage. Diffusion models are not billed in tokens,
// so every count is 0; the object is sent because OpenAI's schema requires it on the event
// and typed clients fail to decode an event without it.
type openAIImageUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		ImageTokens int `json:"image_tokens"`
		TextTokens  int `json:"text_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// imageStreamError is the error event that ends a stream which has started (OpenAI's
// StreamErrorEvent: the SDKs raise any event named error, or any data with an error key).
type imageStreamError struct {
	Type  string            `json:"type"`
	Error openAIErrorObject `json:"error"`
}

// sseMessage is one encoded event: its SSE event name and its JSON data.
type sseMessage struct {
	name string
	data []byte
}

// streamOpenAIImage answers stream=true as OpenAI's image streaming does: Server-Sent Events,
// each "event: <type>\ndata: <json>\n\n". Every image of the request (n of them, generated as
// parallel jobs like the non-streaming route) sends up to partial_images
// image_generation.partial_image events (partial_image_index 0, 1, ... per image; a preview of
// the intermediate latents as the runner renders it, encoded in the requested output_format)
// as soon as the runner emits them, then one image_generation.completed event with the final
// image. Events of different images may interleave; with n > 1 each carries image_index.
//
// An error before the first event is answered with its status and OpenAI's envelope. After
// it, an "event: error" with {"type":"error","error":{...}} ends the stream (both OpenAI SDKs
// raise it as an APIError); the failure of one image cancels the others. The client going
// away (or a failed write) cancels every job of the request at its next step boundary.
func (s *Server) streamOpenAIImage(c *gin.Context, req *imageGeneration, encode func(image.Image) ([]byte, error)) {
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	n := req.NumberOfImages
	events := make(chan sseMessage)
	results := make(chan error, n)
	for i := range n {
		one := req.ImageRequest
		if req.Seed != nil {
			seed := *req.Seed + int64(i)
			one.Seed = &seed
		}
		go func() { results <- s.streamOneImage(ctx, req, i, &one, encode, events) }()
	}

	started, broken := false, false
	var firstErr error
	write := func(m sseMessage) bool {
		if !started {
			started = true
			c.Header("Content-Type", "text/event-stream; charset=utf-8")
			c.Header("Cache-Control", "no-cache")
			c.Header("X-Accel-Buffering", "no")
			c.Status(http.StatusOK)
		}
		if _, err := fmt.Fprintf(c.Writer, "event: %s\ndata: %s\n\n", m.name, m.data); err != nil {
			return false
		}
		c.Writer.Flush()
		return true
	}
	for pending := n; pending > 0; {
		select {
		case m := <-events:
			if broken || firstErr != nil {
				continue // the answer is over; the producers are being cancelled
			}
			if !write(m) {
				broken = true
				cancel()
			}
		case err := <-results:
			pending--
			if err != nil && firstErr == nil && !broken {
				firstErr = err
				cancel()
			}
		}
	}
	switch {
	case broken || errors.Is(c.Request.Context().Err(), context.Canceled): // the client is gone
		c.Error(fmt.Errorf("image stream: %w", errStreamWrite)) //nolint:errcheck // recorded for the access log
	case firstErr != nil && !started:
		s.fail(c, dialectOpenAI, firstErr)
	case firstErr != nil:
		e := s.answerOf(firstErr)
		c.Error(firstErr) //nolint:errcheck // recorded for the access log
		data, err := json.Marshal(imageStreamError{Type: eventError, Error: e.object()})
		if err == nil {
			write(sseMessage{name: eventError, data: data})
		}
	default:
		if s.metrics != nil {
			s.metrics.Images(s.pool(runners.ServiceImage).Runner, n, req.NumInferenceSteps)
		}
	}
}

// streamOneImage runs the i-th image of req as a streaming job and sends its events to
// events (until ctx ends): the partial images in the order the runner emits them, at most
// req.PartialImages of them, then the completed image.
func (s *Server) streamOneImage(ctx context.Context, req *imageGeneration, i int, one *runners.ImageRequest,
	encode func(image.Image) ([]byte, error), events chan<- sseMessage) error {
	send := func(ev *openAIImageEvent) error {
		if req.NumberOfImages > 1 {
			ev.ImageIndex = &i
		}
		data, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", ev.Type, err)
		}
		select {
		case events <- sseMessage{name: ev.Type, data: data}:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	var encErr error
	partials := 0
	onChunk := func(ch runners.Chunk) bool {
		var img image.Image
		if p, ok := ch.(*runners.ImagePartial); ok && p != nil {
			img = p.Image
		}
		if img == nil || partials >= req.PartialImages {
			return true // not a preview, or more than were asked for: not sent
		}
		ev, err := req.event(eventPartialImage, img, encode)
		if err != nil {
			encErr = fmt.Errorf("partial image %d: %w", partials, err)
			return false
		}
		idx := partials
		ev.PartialImageIndex = &idx
		partials++
		return send(ev) == nil
	}
	v, err := s.submitStreaming(ctx, runners.ServiceImage, one, onChunk)
	if encErr != nil {
		return encErr
	}
	if err != nil {
		return err
	}
	res, ok := runners.ResultAs[*runners.ImageResult](v)
	if !ok || res == nil || len(res.Images) == 0 {
		return fmt.Errorf("runner returned %T instead of an image", v)
	}
	ev, err := req.event(eventImageCompleted, res.Images[0], encode)
	if err != nil {
		return err
	}
	ev.Usage = &openAIImageUsage{}
	return send(ev)
}

// event encodes img as one stream event of the request.
func (r *imageGeneration) event(typ string, img image.Image, encode func(image.Image) ([]byte, error)) (*openAIImageEvent, error) {
	enc, err := encode(img)
	if err != nil {
		return nil, fmt.Errorf("encode image: %w", err)
	}
	return &openAIImageEvent{
		Type: typ, B64JSON: base64.StdEncoding.EncodeToString(enc), Background: "opaque",
		CreatedAt: time.Now().Unix(), OutputFormat: r.outputFormat, Quality: r.quality, Size: r.size,
	}, nil
}
