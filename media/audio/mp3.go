package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/hajimehoshi/go-mp3"
)

// mp3DecoderDelay is the standard MP3 synthesis delay (samples) that gapless players drop on
// top of the encoder delay recorded in the LAME tag.
const mp3DecoderDelay = 529

// maxID3Search bounds how far after an ID3v2 tag we look for the first MPEG frame.
const maxID3Search = 64 << 10

// errNotMP3 is internal: the data is neither ID3-tagged nor starts with two MPEG frames.
var errNotMP3 = errors.New("not mp3")

func isNotMP3(err error) bool { return errors.Is(err, errNotMP3) }

// mpegHeader is one parsed MPEG audio frame header.
type mpegHeader struct {
	version  int // 1, 2, or 25 (MPEG-2.5)
	layer    int // 1, 2, 3
	rate     int
	channels int
	size     int // frame length in bytes, header included
	spf      int // samples per frame
	crc      bool
}

var mpegBitrates = [2][3][15]int{ // [v1, v2/2.5][layer-1][index] in kbit/s
	{
		{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	},
	{
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	},
}

// parseMPEGHeader decodes the 4 bytes at b. Free-format (bitrate index 0) frames are refused.
func parseMPEGHeader(b []byte) (mpegHeader, bool) {
	var h mpegHeader
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return h, false
	}
	switch (b[1] >> 3) & 3 {
	case 0:
		h.version = 25
	case 2:
		h.version = 2
	case 3:
		h.version = 1
	default:
		return h, false
	}
	h.layer = 4 - int((b[1]>>1)&3)
	if h.layer == 4 {
		return h, false
	}
	h.crc = b[1]&1 == 0
	bi := int(b[2] >> 4)
	si := int((b[2] >> 2) & 3)
	if bi == 0 || bi == 15 || si == 3 || b[3]&3 == 2 {
		return h, false
	}
	h.rate = [3]int{44100, 48000, 32000}[si]
	vi := 0
	switch h.version {
	case 2:
		h.rate /= 2
		vi = 1
	case 25:
		h.rate /= 4
		vi = 1
	}
	br := mpegBitrates[vi][h.layer-1][bi] * 1000
	pad := int(b[2]>>1) & 1
	switch {
	case h.layer == 1:
		h.size = (12*br/h.rate + pad) * 4
		h.spf = 384
	case h.layer == 2:
		h.size = 144*br/h.rate + pad
		h.spf = 1152
	case h.version == 1:
		h.size = 144*br/h.rate + pad
		h.spf = 1152
	default:
		h.size = 72*br/h.rate + pad
		h.spf = 576
	}
	h.channels = 2
	if b[3]>>6 == 3 {
		h.channels = 1
	}
	return h, h.size >= 4
}

func (h mpegHeader) sameStream(o mpegHeader) bool {
	return h.version == o.version && h.layer == o.layer && h.rate == o.rate
}

// frameAt reports whether a frame header sits at off and is followed by a second matching
// header (or the end of the data, or an ID3v1/APE tag), which rules out chance sync words.
func frameAt(data []byte, off int) (mpegHeader, bool) {
	h, ok := parseMPEGHeader(data[off:])
	if !ok {
		return h, false
	}
	next := off + h.size
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
	return h, ok && h.sameStream(h2)
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
	switch {
	case h0.version == 25:
		return nil, fmt.Errorf("%w: MPEG-2.5 MP3 (8/11/12 kHz) is not supported; send WAV or an MP3 at 16 kHz or more", ErrUnsupportedFormat)
	case h0.layer != 3:
		return nil, fmt.Errorf("%w: MPEG Layer %s audio (MP%d) is not supported; %s", ErrUnsupportedFormat, [4]string{"", "I", "II", "III"}[h0.layer], h0.layer, acceptedFormats)
	}
	info := &mp3Info{first: h0, delay: -1, pad: -1}
	off := first
	if d, p, ok := parseXing(data[first:first+h0.size], h0); ok {
		info.delay, info.pad = d, p
		off += h0.size
	}
	streamStart := off
	contiguous := true
	var pieces [][]byte
	streamLen := 0
	for off+4 <= len(data) {
		h, ok := parseMPEGHeader(data[off:])
		if ok && h.sameStream(h0) && off+h.size <= len(data) {
			pieces = append(pieces, data[off:off+h.size])
			info.offsets = append(info.offsets, streamLen)
			streamLen += h.size
			info.frames++
			off += h.size
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
			if hh, ok := frameAt(data, o); ok && hh.sameStream(h0) {
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
	total := int64(info.frames) * int64(h0.spf)
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
	side := 32
	switch {
	case h.version == 1 && h.channels == 1:
		side = 17
	case h.version != 1 && h.channels == 1:
		side = 9
	case h.version != 1:
		side = 17
	}
	x := 4 + side
	if h.crc {
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

// decodeMP3 decodes an MP3 with go-mp3 under recover, downmixes and applies gapless trimming
// from the LAME tag (as ffmpeg does).
func decodeMP3(ctx context.Context, data []byte, lim Limits) (*pcm, error) {
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
	if err := checkDuration(info.totalSamples, info.first.rate, lim); err != nil {
		return nil, err
	}
	raw, err := runMP3Parallel(ctx, info, runtime.GOMAXPROCS(0), mp3MinChunkFrames)
	if err != nil {
		return nil, err
	}
	skip := 0
	if info.delay >= 0 {
		skip = info.delay + mp3DecoderDelay
	}
	if skip >= len(raw) {
		return nil, fmt.Errorf("%w: MP3 decoded to %d samples, fewer than its %d-sample encoder delay", ErrInvalidAudio, len(raw), skip)
	}
	out := raw[skip:]
	if int64(len(out)) > info.totalSamples {
		out = out[:info.totalSamples]
	}
	return &pcm{mono: out, rate: info.first.rate, channels: info.first.channels}, nil
}

// MP3 decoding in parallel. go-mp3 runs at ~50× real time per core, well behind ffmpeg, and
// cannot be sped up from outside (issue 5, item 3). But an MP3 decoder's state reaches back only
// a little: the bit reservoir (main_data_begin ≤ 511 bytes back, which is many frames when
// frames are small: 26-byte frames at 8 kbit/s), the IMDCT overlap (one granule) and the
// synthesis filter bank's history (1024 samples per channel, less than a frame). So the frames
// can be split into chunks decoded concurrently, each decoder starting at least
// mp3WarmupFrames frames and mp3WarmupBytes bytes early and discarding that output: from there
// on its output is bit-identical to a single decoder's (TestMP3ParallelIdentical; with 8 frames
// and no byte minimum, one sample of a low-bit-rate VBR file differed by 1 LSB). Any chunk that
// fails or comes up short makes the whole file fall back to one sequential decoder, so errors
// and truncated files behave exactly as before. This buys wall-clock time on idle cores, not
// CPU time: per core the MP3 path stays at go-mp3's speed.
const (
	mp3WarmupFrames   = 8
	mp3WarmupBytes    = 4 * 512
	mp3MinChunkFrames = 256 // ~6.7 s at 44.1 kHz; shorter files are decoded by one goroutine
)

// runMP3Parallel decodes info.stream with up to workers goroutines, each taking minChunk frames
// or more.
func runMP3Parallel(ctx context.Context, info *mp3Info, workers, minChunk int) ([]float32, error) {
	spf := info.first.spf
	expect := info.frames * spf
	workers = min(workers, info.frames/minChunk)
	if workers < 2 {
		return runMP3Decoder(ctx, info.stream, expect)
	}
	out := make([]float32, expect)
	ok := make([]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		first, last := info.frames*w/workers, info.frames*(w+1)/workers // frames [first, last)
		from := max(0, first-mp3WarmupFrames)
		for from > 0 && info.offsets[first]-info.offsets[from] < mp3WarmupBytes {
			from--
		}
		end := len(info.stream)
		if last < info.frames {
			end = info.offsets[last]
		}
		wg.Go(func() {
			dst := out[first*spf : last*spf]
			n, err := decodeMP3Into(ctx, info.stream[info.offsets[from]:end], (first-from)*spf, dst)
			ok[w] = err == nil && n == len(dst)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, good := range ok {
		if !good {
			return runMP3Decoder(ctx, info.stream, expect)
		}
	}
	return out, nil
}

// runMP3Decoder decodes stream with one go-mp3 decoder; expect bounds the output.
func runMP3Decoder(ctx context.Context, stream []byte, expect int) ([]float32, error) {
	out := make([]float32, expect)
	n, err := decodeMP3Into(ctx, stream, 0, out)
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// decodeMP3Into feeds stream to go-mp3, which always yields s16le stereo (mono duplicated),
// drops the first skip samples of output and writes the mean of both channels of the following
// ones to dst until it is full or the stream ends. A decoder panic becomes ErrInvalidAudio.
func decodeMP3Into(ctx context.Context, stream []byte, skip int, dst []float32) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("%w: corrupt MP3 data (decoder failed: %v)", ErrInvalidAudio, r)
		}
	}()
	// Hide io.Seeker so go-mp3 does not pre-scan the whole stream on its own.
	dec, err := mp3.NewDecoder(struct{ io.Reader }{bytes.NewReader(stream)})
	if err != nil {
		return 0, fmt.Errorf("%w: corrupt MP3 data: %v", ErrInvalidAudio, err)
	}
	buf := make([]byte, 4*1152*32)
	for n < len(dst) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		got, rerr := io.ReadFull(dec, buf)
		b := buf[:got&^3]
		if skip > 0 {
			k := min(skip, len(b)/4)
			b, skip = b[4*k:], skip-k
		}
		for i := 0; i+4 <= len(b) && n < len(dst); i += 4 {
			l := int16(binary.LittleEndian.Uint16(b[i:]))
			r := int16(binary.LittleEndian.Uint16(b[i+2:]))
			dst[n] = (float32(l) + float32(r)) / 65536
			n++
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return 0, fmt.Errorf("%w: corrupt MP3 data after %d samples: %v", ErrInvalidAudio, n, rerr)
		}
	}
	return n, nil
}
