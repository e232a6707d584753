package audioenc

import (
	"fmt"
	"io"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
)

// flacBlock is the FLAC block size (samples per frame), libFLAC's default.
const flacBlock = 4096

// flacStream is 16-bit mono FLAC through mewkiz/flac's encoder, one frame per 4096 samples
// (fixed-predictor analysis on). Streamed, STREAMINFO cannot be rewritten at the end: it says
// "total samples unknown" and carries no MD5, which FLAC allows.
type flacStream struct {
	enc     *flac.Encoder
	rs      *resampler
	rate    int
	pending []int32
	num     uint64
}

func newFLAC(w io.Writer, o Options) (Stream, error) {
	rate := OutputRate(FLAC, o)
	info := &meta.StreamInfo{BlockSizeMin: 16, BlockSizeMax: flacBlock, SampleRate: uint32(rate), NChannels: 1, BitsPerSample: 16}
	enc, err := flac.NewEncoder(nopCloser{w}, info)
	if err != nil {
		return nil, fmt.Errorf("flac: %w", err)
	}
	return &flacStream{enc: enc, rs: newResampler(o.Rate, o.OutRate), rate: rate}, nil
}

// nopCloser keeps the encoder's Close from closing (or seeking) the caller's writer.
type nopCloser struct{ w io.Writer }

func (n nopCloser) Write(p []byte) (int, error) { return n.w.Write(p) }

func (s *flacStream) Write(x []float32) error {
	for _, v := range s.rs.apply(x) {
		s.pending = append(s.pending, int32(toInt16(v)))
	}
	for len(s.pending) >= flacBlock {
		if err := s.frame(s.pending[:flacBlock]); err != nil {
			return err
		}
		s.pending = s.pending[flacBlock:]
	}
	return nil
}

func (s *flacStream) frame(samples []int32) error {
	n := len(samples)
	f := &frame.Frame{
		Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(n), SampleRate: uint32(s.rate),
			Channels: frame.ChannelsMono, BitsPerSample: 16, Num: s.num},
		Subframes: []*frame.Subframe{{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim},
			Samples: append([]int32(nil), samples...), NSamples: n}},
	}
	s.num++
	if err := s.enc.WriteFrame(f); err != nil {
		return fmt.Errorf("flac: %w", err)
	}
	return nil
}

func (s *flacStream) Close() error {
	if len(s.pending) > 0 {
		if err := s.frame(s.pending); err != nil {
			return err
		}
		s.pending = nil
	}
	if err := s.enc.Close(); err != nil {
		return fmt.Errorf("flac: %w", err)
	}
	return nil
}
