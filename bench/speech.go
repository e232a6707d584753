package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// KindSpeech posts OpenAI's {"model", "input", "voice", "response_format": "pcm"} to
// /v1/audio/speech: the answer streams raw 16-bit samples at 24 kHz, so the first body bytes
// are the time to first audio (the report's TTFC) and the byte count is the audio's length,
// from which each request's real-time factor (audio seconds per wall second) follows.
const KindSpeech Kind = "speech"

// RTF summarizes real-time factors (audio seconds per wall second; no unit).
type RTF struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	Max   float64 `json:"max"`
}

// speechPCMRate is the rate of OpenAI's pcm answer.
const speechPCMRate = 24000

// speechWords are cycled to make a text of the asked word count.
var speechWords = strings.Fields("The bench reads this text aloud so that the time to first audio " +
	"and the real time factor of the server can be measured on long and short inputs alike.")

// SpeechText is a text of n words (a sentence end every 12 words).
func SpeechText(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(speechWords[i%len(speechWords)])
		if i%12 == 11 || i == n-1 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// speechWorkload fills w for KindSpeech: spec.Words words (default 20) spoken by spec.Voice
// (default alloy).
func speechWorkload(w *Workload, spec WorkloadSpec) error {
	words := spec.Words
	if words == 0 {
		words = 20
	}
	if words < 1 || words > 600 {
		return fmt.Errorf("%w: speech words must be 1..600, got %d", ErrConfig, words)
	}
	voice := spec.Voice
	if voice == "" {
		voice = "alloy"
	}
	body, err := json.Marshal(map[string]any{"model": "tts-1", "input": SpeechText(words), "voice": voice, "response_format": "pcm"})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	w.Path, w.UnitName = "/v1/audio/speech", "audio_s"
	w.Spec.Stream = true // every answer streams: TTFC is the time to first audio
	w.body = func(int) []byte { return body }
	return nil
}

// readAudio reads a streamed pcm answer: the first bytes' arrival is the time to first audio,
// the byte count the audio seconds.
func readAudio(r io.Reader, start time.Time, s *sample) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if s.ttfc < 0 {
				s.ttfc = time.Since(start)
			}
			n += int64(k)
		}
		if err != nil {
			s.latency = time.Since(start)
			if !errors.Is(err, io.EOF) {
				s.errKind, s.errMsg = classify(err), err.Error()
			}
			s.units = float64(n/2) / speechPCMRate
			return
		}
	}
}
