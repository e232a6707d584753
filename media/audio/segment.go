package audio

import (
	"math"
	"slices"
)

// Segment is a stretch of speech in seconds.
type Segment struct{ Start, End float64 }

// Voice-activity parameters. Energy is measured in 30 ms windows every 10 ms.
const (
	vadHop          = 0.010 // s
	vadMinPause     = 0.300 // a pause must last this long to split
	vadMinSpeech    = 0.100 // shorter bursts are dropped
	vadPad          = 0.020 // padding added to both ends of a segment
	vadMaxSegment   = 30.0  // no segment is longer (Whisper's window)
	vadSilenceDBFS  = -60.0 // loudest frames below this: the whole input is silence
	vadNoisePct     = 0.10  // percentile taken as the noise floor
	vadLoudPct      = 0.95  // percentile taken as "loud speech"
	vadMinContrast  = 6.0   // dB above the noise floor, at least
	vadContrastFrac = 0.3   // or this fraction of the loud–noise range
	vadBelowLoud    = 45.0  // dB below the loud level is always silence
)

// SpeechSegments splits audio into speech segments where the signal is silent. It is an
// energy-based detector with an adaptive threshold: frame levels (30 ms RMS, 10 ms hop) are
// compared with a threshold placed between the noise floor (10th percentile) and the loud level
// (95th percentile); a pause must last ≥ 300 ms to split, speech shorter than 100 ms is dropped,
// segments are padded by 20 ms and split at their quietest frame so none exceeds 30 s.
// Silent audio, or stationary noise with no louder stretches, gives nil.
func SpeechSegments(samples []float32, rate int) []Segment {
	if rate <= 0 || len(samples) == 0 {
		return nil
	}
	hop := max(1, int(math.Round(vadHop*float64(rate))))
	nh := (len(samples) + hop - 1) / hop
	pow := make([]float64, nh)
	for h := range pow {
		seg := samples[h*hop : min(len(samples), (h+1)*hop)]
		var s float64
		for _, v := range seg {
			s += float64(v) * float64(v)
		}
		pow[h] = s / float64(len(seg))
	}
	db := make([]float64, nh)
	for h := range db {
		lo, hi := max(0, h-1), min(nh-1, h+1)
		var s float64
		for j := lo; j <= hi; j++ {
			s += pow[j]
		}
		db[h] = 10 * math.Log10(s/float64(hi-lo+1)+1e-12)
	}
	sorted := slices.Clone(db)
	slices.Sort(sorted)
	noise := sorted[int(vadNoisePct*float64(nh-1))]
	loud := sorted[int(vadLoudPct*float64(nh-1))]
	if loud < vadSilenceDBFS {
		return nil
	}
	thr := max(noise+max(vadMinContrast, vadContrastFrac*(loud-noise)), loud-vadBelowLoud)

	hopSec := float64(hop) / float64(rate)
	minPause := int(math.Round(vadMinPause / hopSec))
	minSpeech := int(math.Round(vadMinSpeech / hopSec))

	// Runs of speech frames [a, b), with short pauses bridged.
	type run struct {
		a, b       int
		cutA, cutB bool // boundary made by a length split: not padded
	}
	var runs []run
	for h := 0; h < nh; {
		if db[h] < thr {
			h++
			continue
		}
		a := h
		for h < nh && db[h] >= thr {
			h++
		}
		if n := len(runs); n > 0 && a-runs[n-1].b < minPause {
			runs[n-1].b = h
		} else {
			runs = append(runs, run{a: a, b: h})
		}
	}
	// Split runs longer than the maximum at their quietest frame in the second half.
	maxHops := int((vadMaxSegment - 2*vadPad) / hopSec)
	var split []run
	for _, r := range runs {
		for r.b-r.a > maxHops {
			cut, best := r.a+maxHops, math.Inf(1)
			for h := r.a + maxHops/2; h < r.a+maxHops; h++ {
				if db[h] < best {
					cut, best = h, db[h]
				}
			}
			split = append(split, run{a: r.a, b: cut, cutA: r.cutA, cutB: true})
			r.a, r.cutA = cut, true
		}
		split = append(split, r)
	}
	dur := float64(len(samples)) / float64(rate)
	var out []Segment
	for _, r := range split {
		if r.b-r.a < minSpeech {
			continue
		}
		padA, padB := vadPad, vadPad
		if r.cutA {
			padA = 0
		}
		if r.cutB {
			padB = 0
		}
		out = append(out, Segment{
			Start: roundMS(max(0, float64(r.a)*hopSec-padA)),
			End:   min(dur, roundMS(float64(r.b)*hopSec+padB)),
		})
	}
	return out
}

// MergeSegments joins consecutive segments into chunks while a chunk spans at most maxLen
// seconds (end of the last minus start of the first), like the Python server's diarization
// merge. A single segment longer than maxLen is kept as it is.
func MergeSegments(segs []Segment, maxLen float64) []Segment {
	var out []Segment
	for _, s := range segs {
		if n := len(out); n > 0 && s.End-out[n-1].Start <= maxLen {
			out[n-1].End = max(out[n-1].End, s.End)
			continue
		}
		out = append(out, s)
	}
	return out
}

// roundMS rounds seconds to the millisecond (segments are only 10 ms accurate anyway).
func roundMS(s float64) float64 { return math.Round(s*1000) / 1000 }
