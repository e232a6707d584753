package audio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mewkiz/flac"
)

// decodeFLAC decodes a FLAC stream (data starts at "fLaC") with mewkiz/flac under recover.
// The duration limit is checked from STREAMINFO's sample count when it is known, and while
// decoding otherwise (FLAC compresses silence ~1000:1, so the input size bounds nothing).
func decodeFLAC(ctx context.Context, data []byte, lim Limits) (p *pcm, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w: corrupt FLAC data (decoder failed: %v)", ErrInvalidAudio, r)
		}
	}()
	if off, _, err := skipID3v2(data); err == nil {
		data = data[off:] // the library's own ID3 skipping is not trusted with crafted sizes
	}
	stream, err := flac.New(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: bad FLAC header: %v", ErrInvalidAudio, err)
	}
	info := stream.Info
	rate, ch, bps := int(info.SampleRate), int(info.NChannels), int(info.BitsPerSample)
	switch {
	case rate < MinSampleRate || rate > MaxSampleRate:
		return nil, fmt.Errorf("%w: FLAC sample rate %d Hz is outside %d..%d Hz", ErrInvalidAudio, rate, MinSampleRate, MaxSampleRate)
	case bps < 4 || bps > 32:
		return nil, fmt.Errorf("%w: FLAC bits per sample %d is outside 4..32", ErrInvalidAudio, bps)
	}
	if info.NSamples > 0 {
		if err := checkDuration(int64(min(info.NSamples, 1<<62)), rate, lim); err != nil {
			return nil, err
		}
	}
	maxFrames := int64(-1)
	if lim.MaxDuration > 0 {
		maxFrames = int64(lim.MaxDuration * float64(rate))
	}
	// Preallocate from STREAMINFO, but never more than 16 samples per input byte.
	out := make([]float32, 0, min(info.NSamples, uint64(16*len(data))))
	scale := 1 / float32(int64(1)<<(bps-1))
	inv := 1 / float32(ch)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := stream.ParseNext()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: corrupt FLAC frame after %d samples: %v", ErrInvalidAudio, len(out), err)
		}
		if int(f.SampleRate) != rate && f.SampleRate != 0 || int(f.BitsPerSample) != bps || len(f.Subframes) != ch {
			return nil, fmt.Errorf("%w: FLAC frame %d (%d Hz, %d bits, %d channels) disagrees with STREAMINFO (%d Hz, %d bits, %d channels)",
				ErrInvalidAudio, f.Num, f.SampleRate, f.BitsPerSample, len(f.Subframes), rate, bps, ch)
		}
		n := int(f.BlockSize)
		for _, sf := range f.Subframes {
			if len(sf.Samples) < n {
				return nil, fmt.Errorf("%w: FLAC frame %d has a short subframe", ErrInvalidAudio, f.Num)
			}
		}
		for i := 0; i < n; i++ {
			var s int64
			for _, sf := range f.Subframes {
				s += int64(sf.Samples[i])
			}
			out = append(out, float32(s)*scale*inv)
		}
		if err := lim.meter.grow(int64(len(out)), rate); err != nil {
			return nil, err
		}
		if maxFrames >= 0 && int64(len(out)) > maxFrames {
			return nil, checkDuration(int64(len(out)), rate, lim)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: FLAC stream has no audio frames", ErrInvalidAudio)
	}
	return &pcm{mono: out, rate: rate, channels: ch}, nil
}
