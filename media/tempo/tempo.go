// Package tempo changes the speed of speech without changing its pitch: WSOLA (waveform
// similarity overlap-add, Verhelst & Roelands 1993) on mono float32 samples, as a stream. The
// output is built from Hann-windowed 20 ms frames overlapping by half, placed every 10 ms; the
// frame taken from the input for each place starts near place×speed, shifted by up to ±5 ms to
// where the input best continues the frame before it (the highest cross-correlation), so the
// periods of the voice line up and its pitch is kept. The output has round(n/speed) samples for
// n input samples.
package tempo

import (
	"fmt"
	"math"
)

// Limits of Speed, OpenAI's speed range.
const (
	MinSpeed = 0.25
	MaxSpeed = 4
)

// Stretcher changes the speed of a stream of samples.
type Stretcher struct {
	speed          float64
	frame, hop, dt int
	win            []float64
	in             []float32 // input not yet dropped; in[0] is input sample base
	base           int
	total          int // input samples written
	k              int // next output frame
	prev           int // input position of the last frame taken (-1: none)
	acc            []float64
	emitted        int
	flushed        bool
}

// New returns a stretcher for audio at rate that plays it speed times as fast (0.25 to 4).
func New(rate int, speed float64) (*Stretcher, error) {
	if !(speed >= MinSpeed && speed <= MaxSpeed) { // also NaN
		return nil, fmt.Errorf("tempo: speed %v is outside [%v, %v]", speed, MinSpeed, MaxSpeed)
	}
	if rate < 1000 {
		return nil, fmt.Errorf("tempo: sample rate %d", rate)
	}
	frame := rate / 50 &^ 1 // 20 ms, even
	s := &Stretcher{speed: speed, frame: frame, hop: frame / 2, dt: rate / 200, prev: -1}
	s.win = make([]float64, frame)
	for i := range s.win { // periodic Hann: frames overlapping by half sum to 1
		s.win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(frame))
	}
	return s, nil
}

// Stretch changes the speed of a whole audio.
func Stretch(x []float32, rate int, speed float64) ([]float32, error) {
	s, err := New(rate, speed)
	if err != nil {
		return nil, err
	}
	return append(s.Write(x), s.Flush()...), nil
}

// Write takes the next input samples and returns the output samples that are complete.
func (s *Stretcher) Write(x []float32) []float32 {
	if s.speed == 1 {
		return x
	}
	s.in = append(s.in, x...)
	s.total += len(x)
	return s.run(false)
}

// Flush returns the rest of the output (the input is taken to end in silence); the stretcher
// takes no more input.
func (s *Stretcher) Flush() []float32 {
	if s.speed == 1 || s.flushed {
		return nil
	}
	s.flushed = true
	return s.run(true)
}

// sample is input sample i, 0 past the end.
func (s *Stretcher) sample(i int) float64 {
	if i < s.base || i-s.base >= len(s.in) {
		return 0
	}
	return float64(s.in[i-s.base])
}

func (s *Stretcher) run(final bool) []float32 {
	want := int(math.Round(float64(s.total) / s.speed)) // output length when final
	var out []float32
	for {
		nominal := int(math.Round(float64(s.k*s.hop) * s.speed))
		if final && s.k*s.hop >= want {
			break
		}
		// The frame needs input up to the search window's end and the natural continuation's.
		need := max(nominal+s.dt, s.prev+s.hop) + s.frame
		if !final && need > s.total {
			break
		}
		pos := s.best(nominal)
		s.prev = pos
		// acc holds output samples from emitted on; add the frame at k*hop.
		at := s.k*s.hop - s.emitted
		if len(s.acc) < at+s.frame {
			s.acc = append(s.acc, make([]float64, at+s.frame-len(s.acc))...)
		}
		for i, w := range s.win {
			s.acc[at+i] += w * s.sample(pos+i)
		}
		s.k++
		// Output before the next frame's start is complete.
		done := s.k*s.hop - s.emitted
		if final {
			done = min(done, want-s.emitted)
		}
		for _, v := range s.acc[:done] {
			out = append(out, float32(v))
		}
		s.acc = append(s.acc[:0], s.acc[done:]...)
		s.emitted += done
		s.drop()
	}
	if final && s.emitted < want { // cannot happen: the loop ends past want
		out = append(out, make([]float32, want-s.emitted)...)
		s.emitted = want
	}
	return out
}

// best is the input position, within ±dt of nominal, whose frame best continues the last
// frame taken (the highest cross-correlation with the input right after it).
func (s *Stretcher) best(nominal int) int {
	if s.prev < 0 {
		return max(nominal, 0)
	}
	cont := s.prev + s.hop
	bestPos, bestC := max(nominal, 0), math.Inf(-1)
	for d := -s.dt; d <= s.dt; d++ {
		p := nominal + d
		if p < 0 {
			continue
		}
		c := 0.0
		for i := 0; i < s.frame; i += 2 { // every other sample: half the work, same peak
			c += s.sample(p+i) * s.sample(cont+i)
		}
		if c > bestC {
			bestPos, bestC = p, c
		}
	}
	return bestPos
}

// drop forgets input no later frame can read.
func (s *Stretcher) drop() {
	next := int(math.Round(float64(s.k*s.hop)*s.speed)) - s.dt
	keep := min(next, s.prev+s.hop)
	if n := keep - s.base; n > 4096 && n <= len(s.in) {
		s.in = append(s.in[:0], s.in[n:]...)
		s.base += n
	}
}
