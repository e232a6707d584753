package audio

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// FullLogMel is the log-mel spectrogram of a whole recording, as openai/whisper's
// transcribe() computes it: log_mel_spectrogram(audio, n_mels, padding=N_SAMPLES).
type FullLogMel struct {
	// NMels is the number of rows.
	NMels int
	// Frames is the number of columns: len(samples)/160 frames of audio plus the 3000 frames
	// of the 30 s of zeros whisper appends.
	Frames int
	// Data is row-major: value(m, t) at m*Frames+t.
	Data []float32
}

// ContentFrames is whisper's content_frames: the frames of the audio itself (Frames - 3000).
func (f *FullLogMel) ContentFrames() int { return f.Frames - WhisperNFrames }

// Window copies frames [seek, seek+frames) into dst as one encoder input of NMels×3000
// values (row-major), zero-filling the columns from frames on, which is what whisper's
// pad_or_trim(mel[:, seek:seek+frames], N_FRAMES) gives. dst is reused when it has the
// capacity.
func (f *FullLogMel) Window(seek, frames int, dst []float32) ([]float32, error) {
	if seek < 0 || frames < 0 || frames > WhisperNFrames || seek+frames > f.Frames {
		return nil, fmt.Errorf("log-mel window of %d frames at %d outside %d frames", frames, seek, f.Frames)
	}
	n := f.NMels * WhisperNFrames
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for m := range f.NMels {
		row := dst[m*WhisperNFrames : (m+1)*WhisperNFrames]
		copy(row, f.Data[m*f.Frames+seek:m*f.Frames+seek+frames])
		clear(row[frames:])
	}
	return dst, nil
}

// ComputeFull returns the log-mel of all of samples (mono, 16 kHz) with 30 s of zeros
// appended, exactly as whisper's transcribe() computes it once per file: the STFT runs over
// the whole padded signal (centred frames, reflect padding at its two ends), and the floor
// (maximum − 8) is the maximum of the whole file, not of a window. For audio of 30 s or less
// its first 3000 frames equal Compute's. Frames are spread over GOMAXPROCS goroutines.
func (l *LogMel) ComputeFull(ctx context.Context, samples []float32) (*FullLogMel, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// torch.stft over len+480000 samples with center=True: 1 + (len+480000)/160 frames, the
	// last one dropped.
	nFrames := (len(samples) + WhisperNSamples) / WhisperHopLength
	out := &FullLogMel{NMels: l.nMels, Frames: nFrames, Data: make([]float32, l.nMels*nFrames)}
	workers := max(1, min(runtime.GOMAXPROCS(0), nFrames/melMinFramesPerWorker))
	maxes := make([]float64, workers)
	per := (nFrames + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min(nFrames, (w+1)*per)
		wg.Go(func() { maxes[w] = l.framesFull(ctx, samples, out, lo, hi) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gmax := math.Inf(-1)
	for _, m := range maxes {
		gmax = math.Max(gmax, m)
	}
	floor := float32(gmax - 8)
	for i, v := range out.Data {
		out.Data[i] = (max(v, floor) + 4) / 4
	}
	return out, nil
}

// sampleFull is the padded signal at position p: reflect padding of 200 at the left end;
// zeros after the audio (whisper's 30 s of zeros, and the reflect padding of its right end,
// which reflects zeros).
func sampleFull(x []float32, p int) float64 {
	p -= whisperPad
	if p < 0 {
		p = -p
	}
	if p < len(x) {
		return float64(x[p])
	}
	return 0
}

// framesFull computes log10(max(mel, 1e-10)) of frames [lo, hi) into out and returns their
// maximum; it stops early (returning -Inf) when ctx is done.
func (l *LogMel) framesFull(ctx context.Context, x []float32, out *FullLogMel, lo, hi int) float64 {
	s := l.pool.Get().(*melScratch)
	defer l.pool.Put(s)
	gmax := math.Inf(-1)
	for t := lo; t < hi; t++ {
		if t%500 == 0 && ctx.Err() != nil {
			return gmax
		}
		l.melFrame(s, x, t, sampleFull)
		for m, v := range s.mel {
			lv := log10Clamped(v)
			gmax = max(gmax, lv)
			out.Data[m*out.Frames+t] = float32(lv)
		}
	}
	return gmax
}
