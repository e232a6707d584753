package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/media/mp3dec"
)

// mp3DecoderDelay is the standard MP3 synthesis delay (samples) that gapless players drop on
// top of the encoder delay recorded in the LAME tag.
const mp3DecoderDelay = 529

// maxID3Search bounds how far after an ID3v2 tag we look for the first MPEG frame.
const maxID3Search = 64 << 10

// errNotMP3 is internal: the data is neither ID3-tagged nor starts with two MPEG frames.
var errNotMP3 = errors.New("not mp3")

func isNotMP3(err error) bool { return errors.Is(err, errNotMP3) }

// mpegHeader is one parsed MPEG audio frame header (the decoder's parser).
type mpegHeader = mp3dec.Header

func parseMPEGHeader(b []byte) (mpegHeader, bool) { return mp3dec.ParseHeader(b) }

// frameAt reports whether a frame header sits at off and is followed by a second matching
// header (or the end of the data, or an ID3v1/APE tag), which rules out chance sync words.
func frameAt(data []byte, off int) (mpegHeader, bool) {
	h, ok := parseMPEGHeader(data[off:])
	if !ok {
		return h, false
	}
	next := off + h.Size
	switch {
	case next == len(data):
		return h, true
	case next > len(data):
		return h, false
	}
	if bytes.HasPrefix(data[next:], []byte("TAG")) || bytes.HasPrefix(data[next:], []byte("APETAGEX")) {
		return h, true
	}
	h2, ok := parseMPEGHeader(data[next:])
	return h, ok && h.SameStream(h2)
}

// skipID3v2 returns the offset after any ID3v2 tags at the start of data.
func skipID3v2(data []byte) (int, bool, error) {
	off, found := 0, false
	for len(data)-off >= 10 && string(data[off:off+3]) == "ID3" {
		h := data[off : off+10]
		if h[3] == 0xFF || h[4] == 0xFF || h[6]|h[7]|h[8]|h[9] >= 0x80 {
			return 0, false, fmt.Errorf("%w: malformed ID3v2 tag header", ErrInvalidAudio)
		}
		size := int(h[6])<<21 | int(h[7])<<14 | int(h[8])<<7 | int(h[9])
		size += 10
		if h[5]&0x10 != 0 { // footer present
			size += 10
		}
		if size > len(data)-off {
			return 0, false, fmt.Errorf("%w: ID3v2 tag claims %d bytes but only %d follow", ErrInvalidAudio, size, len(data)-off)
		}
		off += size
		found = true
	}
	return off, found, nil
}

// locateMP3 finds the first MPEG audio frame: right after any ID3v2 tags (tolerating up to
// 64 KiB of padding), or at offset 0 for untagged files. It returns errNotMP3 when the data
// does not look like MPEG audio at all.
func locateMP3(data []byte) (int, error) {
	start, tagged, err := skipID3v2(data)
	if err != nil {
		return 0, err
	}
	if !tagged {
		if _, ok := frameAt(data, 0); ok {
			return 0, nil
		}
		return 0, errNotMP3
	}
	end := min(len(data)-3, start+maxID3Search)
	for off := start; off < end; off++ {
		if data[off] == 0xFF {
			if _, ok := frameAt(data, off); ok {
				return off, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: file has an ID3 tag but no MP3 audio frames follow it; %s", ErrUnsupportedFormat, acceptedFormats)
}

// mp3Info is what a header scan learns before any sample is decoded.
type mp3Info struct {
	first        mpegHeader
	stream       []byte // audio frames only (Xing/Info frame, tags and junk removed)
	frames       int    // audio frames in stream
	offsets      []int  // start of each frame in stream
	delay, pad   int    // LAME encoder delay and padding; -1 when there is no LAME tag
	totalSamples int64  // samples per channel after gapless trimming
}

// scanMP3 walks the frame headers from the first frame, skipping a leading Xing/Info/VBRI
// frame, stopping at an ID3v1/APE tag and resynchronising over junk between frames.
func scanMP3(data []byte, first int) (*mp3Info, error) {
	h0, _ := parseMPEGHeader(data[first:])
	if h0.Layer != 3 {
		return nil, fmt.Errorf("%w: MPEG Layer %s audio (MP%d) is not supported; %s", ErrUnsupportedFormat, [4]string{"", "I", "II", "III"}[h0.Layer], h0.Layer, acceptedFormats)
	}
	info := &mp3Info{first: h0, delay: -1, pad: -1}
	off := first
	if d, p, ok := parseXing(data[first:first+h0.Size], h0); ok {
		info.delay, info.pad = d, p
		off += h0.Size
	}
	streamStart := off
	contiguous := true
	var pieces [][]byte
	streamLen := 0
	for off+4 <= len(data) {
		h, ok := parseMPEGHeader(data[off:])
		if ok && h.SameStream(h0) && off+h.Size <= len(data) {
			pieces = append(pieces, data[off:off+h.Size])
			info.offsets = append(info.offsets, streamLen)
			streamLen += h.Size
			info.frames++
			off += h.Size
			continue
		}
		if bytes.HasPrefix(data[off:], []byte("TAG")) || bytes.HasPrefix(data[off:], []byte("APETAGEX")) {
			break
		}
		// Junk: resynchronise on the next frame confirmed by its successor.
		next := -1
		for o := off + 1; o+4 <= len(data); o++ {
			if data[o] != 0xFF {
				continue
			}
			if hh, ok := frameAt(data, o); ok && hh.SameStream(h0) {
				next = o
				break
			}
		}
		if next < 0 {
			break
		}
		contiguous = false
		off = next
	}
	if info.frames == 0 {
		return nil, fmt.Errorf("%w: MP3 has no complete audio frames", ErrInvalidAudio)
	}
	if contiguous {
		info.stream = data[streamStart:off]
	} else {
		info.stream = bytes.Join(pieces, nil) // at most the input size
	}
	total := int64(info.frames) * int64(h0.Samples)
	if info.delay >= 0 {
		total -= int64(info.delay + info.pad)
	}
	if total <= 0 {
		return nil, fmt.Errorf("%w: MP3 gapless tag trims away all %d audio frames", ErrInvalidAudio, info.frames)
	}
	info.totalSamples = total
	return info, nil
}

// parseXing reports whether frame is a Xing/Info/VBRI metadata frame and, when it carries a
// LAME tag, the encoder delay and padding.
func parseXing(frame []byte, h mpegHeader) (delay, pad int, isMeta bool) {
	x := 4 + h.SideInfoSize()
	if h.CRC {
		x += 2
	}
	if len(frame) >= 36+4 && string(frame[36:40]) == "VBRI" {
		return -1, -1, true
	}
	if len(frame) < x+8 || (string(frame[x:x+4]) != "Xing" && string(frame[x:x+4]) != "Info") {
		return -1, -1, false
	}
	flags := binary.BigEndian.Uint32(frame[x+4:])
	l := x + 8
	for _, f := range []struct {
		bit  uint32
		size int
	}{{1, 4}, {2, 4}, {4, 100}, {8, 4}} {
		if flags&f.bit != 0 {
			l += f.size
		}
	}
	// LAME tag: 9-byte encoder string, then delay/padding as two 12-bit fields at +21.
	if len(frame) < l+24 {
		return -1, -1, true
	}
	for _, c := range frame[l : l+4] {
		if c < 0x20 || c > 0x7E {
			return -1, -1, true
		}
	}
	v := frame[l+21:]
	delay = int(v[0])<<4 | int(v[1])>>4
	pad = int(v[1]&0x0F)<<8 | int(v[2])
	return delay, pad, true
}

// decodeMP3 decodes an MP3 with mp3dec, mixed down to mono, and applies gapless trimming from
// the LAME tag (as ffmpeg does). When the caller resamples to at most 0.4 of the stream's rate
// (16 kHz from 44.1 or 48 kHz), the decoder synthesises at half rate: nothing it leaves out
// (above a quarter of the stream's rate) survives the resampler, which then has half as many
// samples to filter. The half-rate samples are the full-rate decode's samples of one parity,
// chosen so that the first kept sample is the first sample after the gapless skip.
func decodeMP3(ctx context.Context, data []byte, lim Limits, targetRate int) (*pcm, error) {
	first, err := locateMP3(data)
	if err != nil {
		if isNotMP3(err) {
			return nil, fmt.Errorf("%w: no MPEG audio frame found", ErrInvalidAudio)
		}
		return nil, err
	}
	info, err := scanMP3(data, first)
	if err != nil {
		return nil, err
	}
	rate := info.first.Rate
	if err := checkDuration(info.totalSamples, rate, lim); err != nil {
		return nil, err
	}
	skip := 0
	if info.delay >= 0 {
		skip = info.delay + mp3DecoderDelay
	}
	total := info.totalSamples
	mode := mp3Mode{}
	if targetRate > 0 && 5*targetRate <= 2*rate {
		mode = mp3Mode{half: true, phase: skip & 1}
		skip /= 2               // half[j] = full[2j+phase]: full[skip] is half[skip/2]
		total = (total + 1) / 2 // full[skip : skip+total] holds ⌈total/2⌉ of them
	}
	raw, damaged, err := runMP3Parallel(ctx, info, mode, runtime.GOMAXPROCS(0), mp3MinChunkFrames)
	if err != nil {
		return nil, err
	}
	// A few damaged frames are concealed with silence, as ffmpeg does; a file that is mostly
	// damage is refused.
	if 2*damaged > info.frames {
		return nil, fmt.Errorf("%w: corrupt MP3 data: %d of %d frames could not be decoded", ErrInvalidAudio, damaged, info.frames)
	}
	if skip >= len(raw) {
		return nil, fmt.Errorf("%w: MP3 decoded to %d samples, fewer than its %d-sample encoder delay", ErrInvalidAudio, len(raw), skip)
	}
	out := raw[skip:]
	if int64(len(out)) > total {
		out = out[:total]
	}
	p := &pcm{mono: out, rate: rate, channels: info.first.Channels}
	if mode.half {
		p.rate = rate / 2
		p.srcRate, p.srcFrames = rate, min(info.totalSamples, 2*int64(len(out)))
	}
	return p, nil
}

// mp3Mode selects full-rate output, or half-rate output of one sample parity.
type mp3Mode struct {
	half  bool
	phase int
}

func (m mp3Mode) decoder() *mp3dec.Decoder {
	if m.half {
		return mp3dec.NewHalfRate(m.phase)
	}
	return mp3dec.New()
}

// MP3 decoding in parallel. An MP3 decoder's state reaches back only a little: the bit
// reservoir (main_data_begin ≤ 511 bytes back, which is many frames when frames are small:
// 26-byte frames at 8 kbit/s), the IMDCT overlap (one granule) and the synthesis filter bank's
// history (16 time slots, less than a granule). So the frames can be split into chunks decoded
// concurrently, each decoder starting at least mp3WarmupFrames frames and mp3WarmupBytes bytes
// early and discarding that output: from there on its output is bit-identical to a single
// decoder's (TestMP3ParallelIdentical). Any chunk that fails or comes up short makes the whole
// file fall back to one sequential decoder, so errors and truncated files behave exactly as
// before. This buys wall-clock time on idle cores, not CPU time.
const (
	mp3WarmupFrames   = 8
	mp3WarmupBytes    = 4 * 512
	mp3MinChunkFrames = 1024 // ~27 s at 44.1 kHz; shorter files are decoded by one goroutine
)

// runMP3Parallel decodes info.stream with up to workers goroutines, each taking minChunk frames
// or more. It also returns how many frames were concealed.
func runMP3Parallel(ctx context.Context, info *mp3Info, mode mp3Mode, workers, minChunk int) ([]float32, int, error) {
	spf := mode.decoder().OutputSamples(info.first)
	workers = min(workers, info.frames/minChunk)
	if workers < 2 {
		return runMP3Decoder(ctx, info, mode)
	}
	out := make([]float32, info.frames*spf)
	ok := make([]bool, workers)
	damaged := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		first, last := info.frames*w/workers, info.frames*(w+1)/workers // frames [first, last)
		from := max(0, first-mp3WarmupFrames)
		for from > 0 && info.offsets[first]-info.offsets[from] < mp3WarmupBytes {
			from--
		}
		wg.Go(func() {
			dst := out[first*spf : last*spf]
			n, bad, err := decodeMP3Into(ctx, info, mode, from, first, last, dst)
			ok[w], damaged[w] = err == nil && n == len(dst), bad
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	total := 0
	for w, good := range ok {
		if !good {
			return runMP3Decoder(ctx, info, mode)
		}
		total += damaged[w]
	}
	return out, total, nil
}

// runMP3Decoder decodes the whole stream with one decoder.
func runMP3Decoder(ctx context.Context, info *mp3Info, mode mp3Mode) ([]float32, int, error) {
	out := make([]float32, info.frames*mode.decoder().OutputSamples(info.first))
	n, damaged, err := decodeMP3Into(ctx, info, mode, 0, 0, info.frames, out)
	if err != nil {
		return nil, 0, err
	}
	return out[:n], damaged, nil
}

// decodeMP3Into decodes frames [from, to) of info.stream, drops the output of the warm-up frames
// [from, first) and writes the following samples to dst until it is full or the frames end. It
// returns how many frames from first on were concealed. A decoder panic, which fuzzing has not
// found, would be an ErrInvalidAudio.
func decodeMP3Into(ctx context.Context, info *mp3Info, mode mp3Mode, from, first, to int, dst []float32) (n, damaged int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, damaged, err = 0, 0, fmt.Errorf("%w: corrupt MP3 data (decoder failed: %v)", ErrInvalidAudio, r)
		}
	}()
	dec := mode.decoder()
	buf := make([]float32, 0, 1152)
	warmDamage := 0
	for f := from; f < to && n < len(dst); f++ {
		if f%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		end := len(info.stream)
		if f+1 < info.frames {
			end = info.offsets[f+1]
		}
		buf, err = dec.Decode(info.stream[info.offsets[f]:end], buf[:0])
		if err != nil {
			return 0, 0, fmt.Errorf("%w: corrupt MP3 data in frame %d of %d: %v", ErrInvalidAudio, f+1, info.frames, err)
		}
		if f < first {
			warmDamage = dec.Concealed()
			continue
		}
		n += copy(dst[n:], buf)
	}
	return n, dec.Concealed() - warmDamage, nil
}
