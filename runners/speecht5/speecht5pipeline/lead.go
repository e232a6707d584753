package speecht5pipeline

import (
	"context"
	"fmt"
)

// Vocoding the first chunk in two pieces (Pipeline.LeadSteps). A vocoder's output near the end
// of its input depends on the frames it has not seen yet, and a simulated or convolutional
// vocoder restarted at a frame does not continue the first run's phase; so the head is vocoded
// from the first LeadSteps steps' mel but only up to leadHold frames before its end, and the
// tail is vocoded from leadContext frames before that point (their samples dropped) and
// crossfaded over the leadHold frames with the head's held-back samples. The two pieces add up
// to as many samples as vocoding the whole chunk at once: HopLength per mel frame.
const (
	// leadContext is the frames the tail's vocoder run sees before its first kept frame.
	leadContext = 8
	// leadHold is the frames at the end of the head held back and crossfaded with the tail.
	leadHold = 2
)

// leadVocoder vocodes one chunk as a head and a tail.
type leadVocoder struct {
	dev   Device
	steps int
	// cut is the frame where the emitted head ends; held is the head's audio after it.
	cut  int
	held []float32
	used bool
}

// at is the step count after which the head is vocoded (0: never).
func (l *leadVocoder) at() int {
	if l == nil {
		return 0
	}
	return l.steps
}

// done reports whether the head was handed out (the chunk outlasted the lead).
func (l *leadVocoder) done() bool { return l != nil && l.used }

// head vocodes the mel so far and returns the samples up to leadHold frames before its end.
func (l *leadVocoder) head(ctx context.Context, mel [][]float32) ([]float32, error) {
	audio, err := l.dev.Vocode(ctx, mel)
	if err != nil {
		return nil, fmt.Errorf("speecht5: vocoder (lead): %w", err)
	}
	if len(audio) != len(mel)*HopLength {
		return nil, fmt.Errorf("speecht5: vocoder gave %d samples for %d frames, want %d per frame", len(audio), len(mel), HopLength)
	}
	l.cut = max(len(mel)-leadHold, 0)
	l.held = audio[l.cut*HopLength:]
	l.used = true
	return audio[:l.cut*HopLength], nil
}

// tail vocodes the chunk's frames from the cut on (with leadContext frames before it) and
// crossfades its first leadHold frames with the head's held-back samples.
func (l *leadVocoder) tail(ctx context.Context, mel [][]float32) ([]float32, error) {
	from := max(l.cut-leadContext, 0)
	audio, err := l.dev.Vocode(ctx, mel[from:])
	if err != nil {
		return nil, err
	}
	if len(audio) != (len(mel)-from)*HopLength {
		return nil, fmt.Errorf("speecht5: vocoder gave %d samples for %d frames, want %d per frame", len(audio), len(mel)-from, HopLength)
	}
	out := audio[(l.cut-from)*HopLength:]
	n := min(len(l.held), len(out))
	for i := range n {
		w := float32(i+1) / float32(n+1)
		out[i] = (1-w)*l.held[i] + w*out[i]
	}
	return out, nil
}
