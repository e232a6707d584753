package audio

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// log10Clamped is log10(max(v, 1e-10)) for v ≥ 0, within 1e-12 of math.Log10; in the log-mel
// profile it took ~19% of the samples where math.Log10 + math.Max took ~30%. v = 2^e·m with
// m in [√½, √2), then ln m = 2·atanh(s), s = (m−1)/(m+1), |s| ≤ 0.172, summed to s¹³
// (truncation < 1e-13).
func log10Clamped(v float64) float64 {
	if !(v > 1e-10) { // also maps NaN to the floor
		return -10
	}
	if v > math.MaxFloat64 {
		return math.Log10(v)
	}
	b := math.Float64bits(v)
	e := int((b>>52)&0x7ff) - 1023
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52) // [1, 2); v > 1e-10 is never subnormal
	if m > math.Sqrt2 {
		m *= 0.5
		e++
	}
	sv := (m - 1) / (m + 1)
	s2 := sv * sv
	ln := 2 * sv * (1 + s2*(1.0/3+s2*(1.0/5+s2*(1.0/7+s2*(1.0/9+s2*(1.0/11+s2*(1.0/13)))))))
	return (float64(e)*math.Ln2 + ln) * (1 / math.Ln10)
}

// Whisper's audio hyper-parameters (openai/whisper whisper/audio.py).
const (
	WhisperSampleRate = 16000
	WhisperNFFT       = 400
	WhisperHopLength  = 160
	WhisperChunkSec   = 30
	WhisperNSamples   = WhisperChunkSec * WhisperSampleRate // 480000: pad_or_trim length
	WhisperNFrames    = WhisperNSamples / WhisperHopLength  // 3000 frames per window
	whisperNFreqs     = WhisperNFFT/2 + 1                   // 201
	whisperPad        = WhisperNFFT / 2                     // center=True reflect padding
)

// LogMel computes Whisper's log-mel spectrogram, exactly as openai/whisper's
// log_mel_spectrogram(pad_or_trim(audio), n_mels): STFT with n_fft 400, hop 160 and a periodic
// Hann window, centred frames with reflect padding (3001 frames, the last dropped), power
// spectrum, mel filter bank, log10(max(mel, 1e-10)), floor at the global maximum − 8, then
// (x + 4) / 4. The arithmetic is float64, so results sit within float32 rounding of the float64
// truth (whisper's own torch float32 output is within 4e-5 of it).
//
// A LogMel is safe for concurrent use; it keeps per-call scratch buffers in a pool.
type LogMel struct {
	nMels  int
	window [WhisperNFFT]float64
	// Sparse filter rows: filter m is nonzero only on bins lo[m] ≤ k < lo[m]+len(rows[m]).
	lo   []int
	rows [][]float64
	pool sync.Pool // *melScratch
}

type melScratch struct {
	fft   *realFFT400
	frame [WhisperNFFT]float64
	power [whisperNFreqs]float64
	mel   []float64
}

// NewLogMel builds an extractor for the given filter bank (n_fft 400, so NFreqs must be 201).
func NewLogMel(f *MelFilters) (*LogMel, error) {
	if f == nil || f.NFreqs != whisperNFreqs || f.NMels < 1 || len(f.Weights) != f.NMels*f.NFreqs {
		return nil, fmt.Errorf("%w: need an n_mels×%d bank for n_fft %d", ErrMelFilters, whisperNFreqs, WhisperNFFT)
	}
	l := &LogMel{nMels: f.NMels, lo: make([]int, f.NMels), rows: make([][]float64, f.NMels)}
	for n := range l.window {
		// torch.hann_window(400), periodic: 0.5 − 0.5·cos(2πn/N).
		l.window[n] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(n)/WhisperNFFT)
	}
	for m := 0; m < f.NMels; m++ {
		row := f.Weights[m*f.NFreqs : (m+1)*f.NFreqs]
		lo, hi := 0, 0
		for k, w := range row {
			if w != 0 {
				if hi == 0 {
					lo = k
				}
				hi = k + 1
			}
		}
		l.lo[m] = lo
		l.rows[m] = make([]float64, hi-lo)
		for k := lo; k < hi; k++ {
			l.rows[m][k-lo] = float64(row[k])
		}
	}
	l.pool.New = func() any {
		return &melScratch{fft: newRealFFT400(), mel: make([]float64, l.nMels)}
	}
	return l, nil
}

// NMels is the number of mel bins (rows of the output).
func (l *LogMel) NMels() int { return l.nMels }

var whisperLogMels struct {
	sync.Mutex
	m map[int]*LogMel
}

// WhisperLogMel returns the shared extractor for nMels (80 or 128 for Whisper models) with the
// filter bank computed by SlaneyMelFilters, which equals whisper's mel_filters.npz.
func WhisperLogMel(nMels int) (*LogMel, error) {
	whisperLogMels.Lock()
	defer whisperLogMels.Unlock()
	if l := whisperLogMels.m[nMels]; l != nil {
		return l, nil
	}
	f, err := SlaneyMelFilters(WhisperSampleRate, WhisperNFFT, nMels)
	if err != nil {
		return nil, err
	}
	l, err := NewLogMel(f)
	if err != nil {
		return nil, err
	}
	if whisperLogMels.m == nil {
		whisperLogMels.m = make(map[int]*LogMel)
	}
	whisperLogMels.m[nMels] = l
	return l, nil
}

// melMinFramesPerWorker: below this many frames per goroutine the fan-out costs more than it
// saves.
const melMinFramesPerWorker = 250

// Compute returns the n_mels×3000 log-mel features (row-major: value(m, t) at m*3000+t) of the
// first 30 s of samples (mono, 16 kHz), zero-padded to 30 s like whisper's pad_or_trim. dst is
// reused when it has the capacity. Frames are spread over GOMAXPROCS goroutines.
func (l *LogMel) Compute(ctx context.Context, samples []float32, dst []float32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := l.nMels * WhisperNFrames
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	if len(samples) > WhisperNSamples {
		samples = samples[:WhisperNSamples]
	}
	workers := min(runtime.GOMAXPROCS(0), WhisperNFrames/melMinFramesPerWorker)
	maxes := make([]float64, max(workers, 1))
	if workers <= 1 {
		maxes[0] = l.frames(samples, dst, 0, WhisperNFrames)
	} else {
		var wg sync.WaitGroup
		per := (WhisperNFrames + workers - 1) / workers
		for w := 0; w < workers; w++ {
			lo, hi := w*per, min(WhisperNFrames, (w+1)*per)
			wg.Go(func() { maxes[w] = l.frames(samples, dst, lo, hi) })
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gmax := math.Inf(-1)
	for _, m := range maxes {
		gmax = math.Max(gmax, m)
	}
	floor := float32(gmax - 8)
	for i, v := range dst {
		dst[i] = (max(v, floor) + 4) / 4
	}
	return dst, nil
}

// sample returns the padded signal at position p (reflect padding of 200 on the left, and on
// the right of the 480000-sample window; zeros between the audio and 30 s).
func sample(x []float32, p int) float64 {
	p -= whisperPad
	if p < 0 {
		p = -p
	} else if p >= WhisperNSamples {
		p = 2*(WhisperNSamples-1) - p
	}
	if p < len(x) {
		return float64(x[p])
	}
	return 0
}

// melFrame computes frame t's mel energies into s.mel: the Hann-windowed N_FFT samples
// around t·HOP (at(x, p) gives the padded signal outside the audio), their power spectrum and
// the filter bank. A frame of zeros skips the FFT.
func (l *LogMel) melFrame(s *melScratch, x []float32, t int, at func([]float32, int) float64) {
	start := t * WhisperHopLength
	nonzero := false
	if start >= whisperPad && start-whisperPad+WhisperNFFT <= len(x) {
		for i, v := range x[start-whisperPad : start-whisperPad+WhisperNFFT] {
			s.frame[i] = float64(v) * l.window[i]
			nonzero = nonzero || v != 0
		}
	} else {
		for i := range s.frame {
			v := at(x, start+i)
			s.frame[i] = v * l.window[i]
			nonzero = nonzero || v != 0
		}
	}
	if !nonzero {
		clear(s.mel)
		return
	}
	s.fft.power(&s.frame, &s.power)
	for m, row := range l.rows {
		p := s.power[l.lo[m] : l.lo[m]+len(row)]
		var acc float64
		for k, w := range row {
			acc += w * p[k]
		}
		s.mel[m] = acc
	}
}

// frames computes log10(max(mel, 1e-10)) of frames [lo, hi) into dst (column t of every row)
// and returns their maximum.
func (l *LogMel) frames(x []float32, dst []float32, lo, hi int) float64 {
	s := l.pool.Get().(*melScratch)
	defer l.pool.Put(s)
	gmax := math.Inf(-1)
	for t := lo; t < hi; t++ {
		l.melFrame(s, x, t, sample)
		for m, v := range s.mel {
			lv := log10Clamped(v)
			if lv > gmax {
				gmax = lv
			}
			dst[m*WhisperNFrames+t] = float32(lv)
		}
	}
	return gmax
}
