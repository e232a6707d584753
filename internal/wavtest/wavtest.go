// Package wavtest writes the WAV files tests upload: mono 16-bit PCM, encoded by
// audioenc.WAVFile (go-audio/wav, the very bytes the server itself writes for a whole WAV), so
// that no test hand-writes RIFF headers. Tests that build malformed or unusual WAV files on
// purpose (the decoder's own tests in media/audio) keep their own byte-level writers.
package wavtest

import (
	"fmt"
	"math"

	"github.com/tenstorrent/tt-media-server-go/media/audioenc"
)

// PCM16 is samples as a mono 16-bit PCM WAV file at rate Hz (a canonical 44-byte header, then
// the samples). It panics on an encoder error, which only a bad rate can cause: tests call it
// with constants.
func PCM16(rate int, samples []int16) []byte {
	b, err := audioenc.WAVFile(rate, samples)
	if err != nil {
		panic(fmt.Sprintf("wavtest: %v", err))
	}
	return b
}

// Tone is seconds of a sine of freq Hz at rate Hz, peak amplitude amp (0..1 of full scale).
func Tone(rate int, seconds, freq, amp float64) []int16 {
	n := int(math.Round(seconds * float64(rate)))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(math.Round(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return out
}
