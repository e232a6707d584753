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
// (fixed-predictor analysis on). STREAMINFO's total sample count and MD5 are known only at the
// end, so where the stream can be rewritten they are: a writer that is an io.WriteSeeker (a
// file, written from its start) is seeked back on Close, and a whole file (Options.Length > 0,
// as Encode gives) is built in memory and written out on Close. A stream to a plain writer
// (an HTTP answer) says "total samples unknown" and carries no MD5, which FLAC allows.
type flacStream struct {
	enc     *flac.Encoder
	rs      *resampler
	rate    int
	pending []int32
	num     uint64
	// whole, when not nil, holds the file until Close copies it to out.
	whole *seekBuffer
	out   io.Writer
}

func newFLAC(w io.Writer, o Options) (Stream, error) {
	rate := OutputRate(FLAC, o)
	info := &meta.StreamInfo{BlockSizeMin: 16, BlockSizeMax: flacBlock, SampleRate: uint32(rate), NChannels: 1, BitsPerSample: 16}
	s := &flacStream{rs: newResampler(o.Rate, o.OutRate), rate: rate, out: w}
	var dst io.Writer
	switch ws, seekable := w.(io.WriteSeeker); {
	case seekable:
		dst = nopCloseSeeker{ws}
	case o.Length > 0:
		s.whole = &seekBuffer{}
		dst = s.whole
	default:
		dst = nopCloser{w}
	}
	enc, err := flac.NewEncoder(dst, info)
	if err != nil {
		return nil, fmt.Errorf("flac: %w", err)
	}
	s.enc = enc
	return s, nil
}

// nopCloser keeps the encoder's Close from closing (or seeking) the caller's writer.
type nopCloser struct{ w io.Writer }

func (n nopCloser) Write(p []byte) (int, error) { return n.w.Write(p) }

// nopCloseSeeker lets the encoder seek back to rewrite STREAMINFO, but not close the writer.
type nopCloseSeeker struct{ ws io.WriteSeeker }

func (n nopCloseSeeker) Write(p []byte) (int, error)           { return n.ws.Write(p) }
func (n nopCloseSeeker) Seek(off int64, wh int) (int64, error) { return n.ws.Seek(off, wh) }

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
	if s.whole != nil {
		if _, err := s.out.Write(s.whole.buf); err != nil {
			return fmt.Errorf("flac: %w", err)
		}
	}
	return nil
}
