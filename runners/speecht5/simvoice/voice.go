// Package simvoice is SpeechT5's simulated device (mock-device mode): the device programs'
// results computed in Go, while their time is spent on the simulated device (a Timer, e.g.
// runners/simdev). It speaks in a voice that is audible, deterministic, as long as the text
// implies (about 2.2 decoder steps per input token, stopping through the real stop rule on
// stop logits it scripts) and different per text and per speaker: each character gets its own
// two formants, the speaker embedding sets the pitch and the formant shift, and the vocoder
// sums the speaker's harmonics shaped by the mel envelope.
package simvoice

import (
	"context"
	"hash/fnv"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/speecht5pipeline"
)

// Program names of SpeechT5's device programs (runners/programs declares them).
const (
	ProgDecoder = "speecht5-decoder-step"
	ProgPostnet = "speecht5-postnet"
	ProgVocoder = "speecht5-vocoder"
)

// ProgEncoder is the encoder program of a bucket.
func ProgEncoder(bucket int) string { return "speecht5-encoder-" + itoa(bucket) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// StepsPerToken is how many decoder steps the simulated voice spends per input token.
const StepsPerToken = 2.2

// Timer spends a program's device time n times; it returns ctx's error when cancelled.
type Timer interface {
	Spend(ctx context.Context, program string, n int) error
}

// Device is the simulated SpeechT5 device of one request's speaker.
type Device struct {
	Timer Timer
	// Speaker is the embedding the voice is made from (512 floats; nil is a neutral voice).
	Speaker []float32
}

type encoded struct {
	ids   []int32
	steps int // the step at which the scripted stop logits fire
}

// Voice is a speaker's pitch and formant scale.
type Voice struct {
	F0, Formant float64
}

// VoiceOf derives the voice from an embedding: a pitch between 85 and 255 Hz and a formant
// scale between 0.85 and 1.2, both from a hash of the embedding's bits.
func VoiceOf(emb []float32) Voice {
	h := fnv.New64a()
	for _, v := range emb {
		b := math.Float32bits(v)
		_, _ = h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
	}
	x := h.Sum64()
	return Voice{F0: 85 + float64(x%1700)/10, Formant: 0.85 + float64((x>>20)%350)/1000}
}

// Encode spends the bucket's encoder time and keeps the real ids.
func (d *Device) Encode(ctx context.Context, ids []int32, _ []float32, realLen int) (speecht5pipeline.Encoded, error) {
	if err := d.Timer.Spend(ctx, ProgEncoder(len(ids)), 1); err != nil {
		return nil, err
	}
	steps := int(math.Ceil(StepsPerToken * float64(realLen)))
	steps = min(max(steps, speecht5pipeline.MinStopStep+1), speecht5pipeline.MaxSteps)
	return &encoded{ids: append([]int32(nil), ids[:realLen]...), steps: steps}, nil
}

// Step spends one decoder step and one postnet run and returns the frames of the character
// the step falls on; its stop logits are -8 until the text's steps are spoken, then +8.
func (d *Device) Step(ctx context.Context, e speecht5pipeline.Encoded, _ []float32, step int) ([][]float32, []float32, error) {
	if err := d.Timer.Spend(ctx, ProgDecoder, 1); err != nil {
		return nil, nil, err
	}
	if err := d.Timer.Spend(ctx, ProgPostnet, 1); err != nil {
		return nil, nil, err
	}
	enc := e.(*encoded)
	v := VoiceOf(d.Speaker)
	frames := make([][]float32, speecht5pipeline.ReductionFactor)
	for f := range frames {
		pos := float64(step*speecht5pipeline.ReductionFactor+f) / float64(enc.steps*speecht5pipeline.ReductionFactor)
		idx := min(int(pos*float64(len(enc.ids))), len(enc.ids)-1)
		frames[f] = melFrame(enc.ids[idx], v, pos)
	}
	stop := float32(-8)
	if step+1 >= enc.steps {
		stop = 8
	}
	return frames, []float32{stop, stop - 20}, nil
}

// silent reports the ids the voice does not sound: the word separator, </s>, <pad>, <unk>.
func silent(id int32) bool { return id <= 4 }

// formants are a character id's two formant frequencies.
func formants(id int32, v Voice) (f1, f2 float64) {
	x := uint32(id)*2654435761 + 12345
	f1 = (280 + float64(x%520)) * v.Formant
	f2 = (900 + float64((x>>10)%1500)) * v.Formant
	return f1, f2
}

// melHz is the centre frequency of mel bin b (HTK mel scale, 80 bins from 80 Hz to 7600 Hz as
// SpeechT5's feature extractor).
func melHz(b int) float64 {
	mel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	lo, hi := mel(80), mel(7600)
	m := lo + (hi-lo)*float64(b+1)/float64(speecht5pipeline.MelBins+1)
	return 700 * (math.Pow(10, m/2595) - 1)
}

// melFrame is the log-mel envelope of a character: two formant peaks over a sloping floor,
// with a syllable-rate amplitude ripple; silence for the silent ids.
func melFrame(id int32, v Voice, pos float64) []float32 {
	out := make([]float32, speecht5pipeline.MelBins)
	if silent(id) {
		for i := range out {
			out[i] = -11
		}
		return out
	}
	f1, f2 := formants(id, v)
	amp := 0.75 + 0.25*math.Sin(2*math.Pi*pos*7)
	for b := range out {
		hz := melHz(b)
		e := math.Exp(-sq((hz-f1)/(0.18*f1))) + 0.6*math.Exp(-sq((hz-f2)/(0.12*f2))) + 0.02*math.Exp(-hz/2000)
		out[b] = float32(math.Log(1e-5 + amp*e))
	}
	return out
}

func sq(x float64) float64 { return x * x }

// Vocode spends the vocoder's time and sums the speaker's harmonics below 4 kHz, each weighted
// by the frame's mel envelope at its frequency, with phases kept across frames.
func (d *Device) Vocode(ctx context.Context, mel [][]float32) ([]float32, error) {
	if err := d.Timer.Spend(ctx, ProgVocoder, 1); err != nil {
		return nil, err
	}
	return Synthesize(mel, VoiceOf(d.Speaker)), nil
}

// Synthesize is the simulated vocoder: HopLength samples per mel frame.
func Synthesize(mel [][]float32, v Voice) []float32 {
	out := make([]float32, len(mel)*speecht5pipeline.HopLength)
	nh := int(4000 / v.F0)
	binOf := make([]int, nh+1)
	for k := 1; k <= nh; k++ {
		hz, best := float64(k)*v.F0, 0
		for b := range speecht5pipeline.MelBins {
			if math.Abs(melHz(b)-hz) < math.Abs(melHz(best)-hz) {
				best = b
			}
		}
		binOf[k] = best
	}
	amps := make([]float64, nh+1)
	prevAmps := make([]float64, nh+1)
	// Each harmonic is a phasor turned by its angle per sample (re-normalized every frame).
	re, im := make([]float64, nh+1), make([]float64, nh+1)
	cr, ci := make([]float64, nh+1), make([]float64, nh+1)
	for k := 1; k <= nh; k++ {
		w := 2 * math.Pi * float64(k) * v.F0 / speecht5pipeline.SampleRate
		re[k], cr[k], ci[k] = 1, math.Cos(w), math.Sin(w)
	}
	for f, frame := range mel {
		copy(prevAmps, amps)
		for k := 1; k <= nh; k++ {
			amps[k] = math.Exp(float64(frame[binOf[k]]))
		}
		dst := out[f*speecht5pipeline.HopLength : (f+1)*speecht5pipeline.HopLength]
		for k := 1; k <= nh; k++ {
			a0, da := prevAmps[k], (amps[k]-prevAmps[k])/speecht5pipeline.HopLength
			x, y, c, sn := re[k], im[k], cr[k], ci[k]
			for i := range dst {
				x, y = x*c-y*sn, x*sn+y*c
				dst[i] += float32(0.25 * (a0 + da*float64(i)) * y)
			}
			n := math.Hypot(x, y)
			re[k], im[k] = x/n, y/n
		}
	}
	for i, s := range out { // soft clip to [-1, 1]
		out[i] = float32(math.Tanh(float64(s)))
	}
	return out
}
