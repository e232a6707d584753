// Package speecht5pipeline is the host pipeline of HEAD's SpeechT5 runner over a device: the text is
// normalized and chunked (runners/speecht5/textnorm), each chunk tokenized and padded to its
// encoder bucket with the attention mask (runners/speecht5/speecht5tokenizer), encoded, then decoded
// autoregressively — at most MaxSteps steps, each giving ReductionFactor 80-bin mel frames after
// the postnet, the last frame fed back as the next input, stopping at step ≥ MinStopStep once
// Σ sigmoid(stop logits) ≥ StopThreshold — and vocoded. Unlike HEAD, which vocodes the
// concatenated mel once at the end, each chunk is vocoded as soon as its decoder loop ends and
// handed to the caller, so the first audio does not wait for the whole text — and, with
// LeadSteps, the first chunk's head is vocoded after a fixed number of steps, so the first audio
// does not wait for the first chunk either (lead.go); the result still holds the mel of every
// chunk, concatenated. The context is checked before every decoder
// step: a cancelled request stops within one step.
package speecht5pipeline

import (
	"context"
	"fmt"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/speecht5tokenizer"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/textnorm"
)

// HEAD's SpeechT5 constants.
const (
	// MaxSteps is MAX_KV_STEPS: the decoder steps one chunk may take.
	MaxSteps = 800
	// ReductionFactor is the mel frames one decoder step gives.
	ReductionFactor = 2
	// MelBins is the mel spectrogram's bins per frame.
	MelBins = 80
	// MinStopStep is the first step at which the stop rule is read.
	MinStopStep = 10
	// StopThreshold is what Σ sigmoid(stop logits) must reach to stop.
	StopThreshold = 0.5
	// SampleRate is the vocoder's output rate.
	SampleRate = 16000
	// HopLength is the vocoder's samples per mel frame.
	HopLength = 256
)

// Encoded is a device's encoder output for one chunk (opaque to the pipeline).
type Encoded any

// Device is what the pipeline runs on: the device programs of SpeechT5 (encoder per bucket,
// the traced decoder step with the postnet, the HiFi-GAN vocoder).
type Device interface {
	// Encode runs the encoder of len(ids)'s bucket over padded ids with the attention mask;
	// realLen is the number of real ids.
	Encode(ctx context.Context, ids []int32, mask []float32, realLen int) (Encoded, error)
	// Step runs decoder step step (0-based) with prev, the last mel frame (zeros at step 0),
	// and the postnet: ReductionFactor mel frames of MelBins and the stop logits.
	Step(ctx context.Context, enc Encoded, prev []float32, step int) (frames [][]float32, stopLogits []float32, err error)
	// Vocode turns mel frames into SampleRate samples.
	Vocode(ctx context.Context, mel [][]float32) ([]float32, error)
}

// ShouldStop is the stop rule of HEAD's decoder loop: from step MinStopStep on, stop once the
// sum of the sigmoids of the step's stop logits reaches StopThreshold.
func ShouldStop(step int, stopLogits []float32) bool {
	if step < MinStopStep {
		return false
	}
	sum := 0.0
	for _, l := range stopLogits {
		sum += 1 / (1 + math.Exp(-float64(l)))
	}
	return sum >= StopThreshold
}

// Chunks is the text as the decoder sees it: normalized, chunked as HEAD's chunk_text does
// (with the tokenizer's counts), and any piece still beyond the encoder's budget cut further
// (textnorm.Fit).
func Chunks(text string, tok *speecht5tokenizer.Tokenizer) []string {
	var out []string
	for _, c := range textnorm.Chunk(textnorm.Normalize(text), textnorm.DefaultChunkSize, tok.Count) {
		out = append(out, textnorm.Fit(c, textnorm.MaxEncoderTokens, tok.Count)...)
	}
	return out
}

// ChunkAudio is one chunk's vocoded audio.
type ChunkAudio struct {
	Index, Chunks int
	Text          string
	Samples       []float32
	Steps         int
	// Lead marks the early head of the first chunk (Pipeline.LeadSteps); the chunk's other
	// piece follows with the same Index.
	Lead bool
}

// Result is a whole text's speech.
type Result struct {
	Samples []float32
	// Mel is every chunk's mel frames, concatenated along time.
	Mel   [][]float32
	Steps int
	// Tokens is the encoder input ids of every chunk (without padding).
	Tokens int
	// Chunks is the number of text chunks.
	Chunks int
}

// Pipeline runs text through a device.
type Pipeline struct {
	Tok *speecht5tokenizer.Tokenizer
	Dev Device
	// OnStep, when not nil, is told after every decoder step (a seam for metrics and tests).
	OnStep func(chunk, step int)
	// FirstChunkChars, when > 0, caps the first chunk (streaming): a longer one is cut at the
	// last clause end, else the last space, within the cap (textnorm.Lead), so that the first
	// audio comes after as many decoder steps for a long text as for a short one.
	FirstChunkChars int
	// LeadSteps, when > 0 and the caller takes the audio as it comes, vocodes the first chunk
	// early: after LeadSteps decoder steps its mel so far is vocoded and handed out, so the first
	// audio waits for the encoder, LeadSteps steps and one vocoder run, whatever the length of the
	// text or of its first chunk; the rest of the chunk follows when its loop ends (lead.go).
	LeadSteps int
}

// Generate speaks text: emit (may be nil) gets each chunk's audio as soon as it is vocoded;
// an emit error stops the work and is returned.
func (p *Pipeline) Generate(ctx context.Context, text string, emit func(ChunkAudio) error) (*Result, error) {
	chunks := Chunks(text, p.Tok)
	if p.FirstChunkChars > 0 && len(chunks) > 0 {
		chunks = append(textnorm.Lead(chunks[0], p.FirstChunkChars), chunks[1:]...)
	}
	res := &Result{Chunks: len(chunks)}
	for i, c := range chunks {
		var lead *leadVocoder
		if i == 0 && p.LeadSteps > 0 && emit != nil {
			lead = &leadVocoder{dev: p.Dev, steps: p.LeadSteps}
		}
		var onLead func([][]float32) error
		if lead != nil {
			onLead = func(mel [][]float32) error {
				audio, err := lead.head(ctx, mel)
				if err != nil {
					return err
				}
				res.Samples = append(res.Samples, audio...)
				return emit(ChunkAudio{Index: i, Chunks: len(chunks), Text: c, Samples: audio, Lead: true})
			}
		}
		mel, steps, err := p.decode(ctx, i, c, lead.at(), onLead)
		res.Steps += steps
		res.Tokens += p.Tok.Count(c)
		if err != nil {
			return res, err
		}
		var audio []float32
		if lead.done() {
			audio, err = lead.tail(ctx, mel)
		} else {
			audio, err = p.Dev.Vocode(ctx, mel)
		}
		if err != nil {
			return res, fmt.Errorf("speecht5: vocoder: %w", err)
		}
		res.Mel = append(res.Mel, mel...)
		res.Samples = append(res.Samples, audio...)
		if emit != nil {
			if err := emit(ChunkAudio{Index: i, Chunks: len(chunks), Text: c, Samples: audio, Steps: steps}); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// decode runs the encoder and the decoder loop of one chunk and returns its mel frames;
// onLead, when not nil, is given the mel so far after leadAt steps if the loop goes on longer.
func (p *Pipeline) decode(ctx context.Context, index int, text string, leadAt int, onLead func([][]float32) error) ([][]float32, int, error) {
	ids := p.Tok.Encode(text)
	padded, mask, err := speecht5tokenizer.Pad(ids)
	if err != nil {
		return nil, 0, fmt.Errorf("speecht5: chunk %d: %w", index, err)
	}
	enc, err := p.Dev.Encode(ctx, padded, mask, len(ids))
	if err != nil {
		return nil, 0, fmt.Errorf("speecht5: encoder: %w", err)
	}
	prev := make([]float32, MelBins)
	var mel [][]float32
	for step := range MaxSteps {
		if err := ctx.Err(); err != nil {
			return mel, step, err
		}
		frames, stop, err := p.Dev.Step(ctx, enc, prev, step)
		if err != nil {
			return mel, step, fmt.Errorf("speecht5: decoder step %d: %w", step, err)
		}
		if len(frames) == 0 {
			return mel, step, fmt.Errorf("speecht5: decoder step %d gave no mel frame", step)
		}
		mel = append(mel, frames...)
		prev = frames[len(frames)-1]
		if p.OnStep != nil {
			p.OnStep(index, step)
		}
		if ShouldStop(step, stop) {
			return mel, step + 1, nil
		}
		if onLead != nil && step+1 == leadAt {
			if err := onLead(mel); err != nil {
				return mel, step + 1, err
			}
		}
	}
	return mel, MaxSteps, nil
}
