package wan

import (
	"crypto/sha256"
	"encoding/binary"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// simAudio is the simulated soundtrack of a text-to-audio-video model: as long as the clip
// (frames at fps), a two-note chord whose pitches come from the prompt and whose pulse comes
// from the seed, each channel a little apart, so a test can tell it from silence and from
// another prompt's. A real pipeline returns its vocoder's output in the same shape.
func simAudio(req *runners.VideoRequest, track runners.AudioTrack, frames, fps int) *runners.VideoAudio {
	sum := sha256.Sum256([]byte("audio\x00" + req.Prompt))
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(req.Seed))
	pulse := sha256.Sum256(append(sum[:], seed[:]...))
	f0 := 220 + float64(sum[0]) // 220-475 Hz
	f1 := f0 * (1.25 + float64(sum[1]%3)*0.25)
	beat := 1 + float64(pulse[0]%4) // 1-4 pulses a second
	rate, ch := track.SampleRate, track.Channels
	n := frames * rate / fps
	a := &runners.VideoAudio{SampleRate: rate, Channels: ch, Samples: make([]int16, n*ch)}
	for i := range n {
		t := float64(i) / float64(rate)
		env := 0.55 + 0.45*math.Sin(2*math.Pi*beat*t)
		for c := range ch {
			v := math.Sin(2*math.Pi*f0*t) + 0.6*math.Sin(2*math.Pi*f1*t+float64(c)*math.Pi/3)
			a.Samples[i*ch+c] = int16(9000 * env * v)
		}
	}
	return a
}
