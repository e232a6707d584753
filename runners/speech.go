package runners

import (
	"fmt"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// ServiceTextToSpeech is the text-to-speech API family (HEAD's MODEL_SERVICE=text_to_speech).
const ServiceTextToSpeech = catalogue.ServiceTextToSpeech

// SpeechEmbeddingDim is the length of a SpeechT5 speaker embedding (an x-vector).
const SpeechEmbeddingDim = 512

// SpeechRequest is a validated text-to-speech request.
type SpeechRequest struct {
	// Text is the text to speak (non-blank; the server bounds its length).
	Text string
	// SpeakerID names a speaker of the runner's speaker table; "" with Embedding nil uses the
	// runner's default speaker.
	SpeakerID string
	// Embedding, when not nil, is the client's own speaker x-vector (SpeechEmbeddingDim floats)
	// and replaces SpeakerID.
	Embedding []float32
	// Stream asks for each chunk's audio through Task.Emit as *SpeechChunk as soon as it is
	// vocoded.
	Stream bool
}

// SpeechChunk is the audio of one text chunk, streamed as soon as it is vocoded.
type SpeechChunk struct {
	// Index is the chunk's number (0-based) of Chunks.
	Index, Chunks int
	// Samples are mono float32 samples in [-1, 1] at SampleRate.
	Samples    []float32
	SampleRate int
}

// SpeechResult is the whole synthesized speech.
type SpeechResult struct {
	Samples    []float32
	SampleRate int
	// SpeakerID is the speaker actually used ("" for a client's embedding).
	SpeakerID string
	// Chunks is how many text chunks were spoken; Steps the decoder steps they took; Tokens
	// the encoder input ids of all chunks.
	Chunks, Steps, Tokens int
}

// Service of the speech types.
func (*SpeechRequest) Service() Service { return ServiceTextToSpeech }
func (*SpeechResult) Service() Service  { return ServiceTextToSpeech }
func (*SpeechChunk) Service() Service   { return ServiceTextToSpeech }

// Cost of a speech job for the scheduler's wait predictions: its characters in hundreds (a
// hundred characters are about six seconds of speech), at least one.
func (r *SpeechRequest) Cost() float64 { return max(float64(len(r.Text))/100, 1) }

// speechProbe is the canary's speech request: a short sentence (deep: ten of them, several
// chunks), answered with audio.
func speechProbe(deep bool) (Request, func(Result) error) {
	text := "The quick brown fox jumps over the lazy dog."
	if deep {
		text = strings.TrimSpace(strings.Repeat(text+" ", 10))
	}
	return &SpeechRequest{Text: text}, func(v Result) error {
		res, ok := ResultAs[*SpeechResult](v)
		if !ok || res == nil || len(res.Samples) == 0 || res.SampleRate <= 0 {
			return fmt.Errorf("canary probe: the runner answered %T without audio", v)
		}
		return nil
	}
}
