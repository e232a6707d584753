package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type chunk struct {
	id   string
	body []byte
}

type wavSpec struct {
	tag        uint16 // 1 PCM, 3 float, 6 A-law, 7 μ-law
	ch, rate   int
	bits       int
	extensible bool    // write WAVE_FORMAT_EXTENSIBLE with tag as the sub-format
	before     []chunk // chunks written before fmt
	between    []chunk // chunks between fmt and data
	blockAlign int     // 0: computed
	dataSize   *uint32 // nil: actual size
	riffSize   *uint32 // nil: actual size
	trailing   []byte
}

func u32p(v uint32) *uint32 { return &v }

// sweep returns frames×ch interleaved values in [-0.9, 0.9], different per channel.
func sweep(frames, ch int) []float64 {
	v := make([]float64, frames*ch)
	for i := 0; i < frames; i++ {
		for c := 0; c < ch; c++ {
			v[i*ch+c] = 0.9 * math.Sin(float64(i)*0.013*float64(c+1)+float64(c))
		}
	}
	return v
}

func encodeSample(w *bytes.Buffer, s wavSpec, v float64) {
	switch {
	case s.tag == 3 && s.bits == 32:
		_ = binary.Write(w, binary.LittleEndian, float32(v))
	case s.tag == 3:
		_ = binary.Write(w, binary.LittleEndian, v)
	case s.bits == 8:
		w.WriteByte(byte(min(255, math.Round(v*128)+128)))
	case s.bits == 16:
		_ = binary.Write(w, binary.LittleEndian, int16(math.Round(v*32767)))
	case s.bits == 24:
		x := int32(math.Round(v * 8388607))
		w.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16)})
	default:
		_ = binary.Write(w, binary.LittleEndian, int32(math.Round(v*2147483647)))
	}
}

func writeChunk(w *bytes.Buffer, c chunk, size *uint32) {
	w.WriteString(c.id)
	n := uint32(len(c.body))
	if size != nil {
		n = *size
	}
	_ = binary.Write(w, binary.LittleEndian, n)
	w.Write(c.body)
	if len(c.body)%2 == 1 {
		w.WriteByte(0)
	}
}

// makeWAV builds a WAV file; samples are interleaved values in [-1, 1] (or raw bytes for G.711
// when s.tag is 6 or 7: then samples are byte values).
func makeWAV(t testing.TB, s wavSpec, samples []float64) []byte {
	t.Helper()
	var fm bytes.Buffer
	le := binary.LittleEndian
	ba := s.blockAlign
	if ba == 0 {
		ba = s.ch * s.bits / 8
	}
	tag := s.tag
	if s.extensible {
		tag = 0xFFFE
	}
	_ = binary.Write(&fm, le, tag)
	_ = binary.Write(&fm, le, uint16(s.ch))
	_ = binary.Write(&fm, le, uint32(s.rate))
	_ = binary.Write(&fm, le, uint32(s.rate*ba))
	_ = binary.Write(&fm, le, uint16(ba))
	_ = binary.Write(&fm, le, uint16(s.bits))
	if s.extensible {
		_ = binary.Write(&fm, le, uint16(22))
		_ = binary.Write(&fm, le, uint16(s.bits))
		_ = binary.Write(&fm, le, uint32(0))
		_ = binary.Write(&fm, le, s.tag)
		fm.Write([]byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71})
	}
	var data bytes.Buffer
	for _, v := range samples {
		if s.tag == 6 || s.tag == 7 {
			data.WriteByte(byte(v))
			continue
		}
		encodeSample(&data, s, v)
	}
	var body bytes.Buffer
	body.WriteString("WAVE")
	for _, c := range s.before {
		writeChunk(&body, c, nil)
	}
	writeChunk(&body, chunk{"fmt ", fm.Bytes()}, nil)
	for _, c := range s.between {
		writeChunk(&body, c, nil)
	}
	writeChunk(&body, chunk{"data", data.Bytes()}, s.dataSize)
	body.Write(s.trailing)
	var out bytes.Buffer
	out.WriteString("RIFF")
	riff := uint32(body.Len())
	if s.riffSize != nil {
		riff = *s.riffSize
	}
	_ = binary.Write(&out, le, riff)
	out.Write(body.Bytes())
	return out.Bytes()
}

// TestDecodeWAVVariants decodes every supported WAV flavour built here and checks every sample.
func TestDecodeWAVVariants(t *testing.T) {
	list := chunk{"LIST", []byte("INFOISFT\x05\x00\x00\x00test\x00")} // odd size: padded
	for _, tc := range []struct {
		name string
		spec wavSpec
		tol  float64
	}{
		{"pcm u8 mono", wavSpec{tag: 1, ch: 1, rate: 8000, bits: 8}, 1.0 / 256},
		{"pcm s16 mono", wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16}, 1e-4},
		{"pcm s16 stereo", wavSpec{tag: 1, ch: 2, rate: 44100, bits: 16}, 1e-4},
		{"pcm s24 mono", wavSpec{tag: 1, ch: 1, rate: 48000, bits: 24}, 1e-6},
		{"pcm s32 stereo", wavSpec{tag: 1, ch: 2, rate: 96000, bits: 32}, 1e-6},
		{"float32 mono", wavSpec{tag: 3, ch: 1, rate: 16000, bits: 32}, 1e-6},
		{"float64 stereo", wavSpec{tag: 3, ch: 2, rate: 22050, bits: 64}, 1e-6},
		{"extensible s16 6ch", wavSpec{tag: 1, ch: 6, rate: 48000, bits: 16, extensible: true}, 1e-4},
		{"extensible s24 stereo", wavSpec{tag: 1, ch: 2, rate: 44100, bits: 24, extensible: true}, 1e-6},
		{"extensible float32", wavSpec{tag: 3, ch: 1, rate: 16000, bits: 32, extensible: true}, 1e-6},
		{"extensible u8 3ch", wavSpec{tag: 1, ch: 3, rate: 11025, bits: 8, extensible: true}, 1.0 / 256},
		{"LIST before fmt, odd size", wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, before: []chunk{list}}, 1e-4},
		{"fact and odd chunk before data", wavSpec{tag: 3, ch: 1, rate: 16000, bits: 32,
			between: []chunk{{"fact", []byte{1, 0, 0, 0}}, {"junk", []byte{1, 2, 3}}}}, 1e-6},
		{"data size 0xFFFFFFFF", wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, dataSize: u32p(0xFFFFFFFF)}, 1e-4},
		{"riff+data 0xFFFFFFFF", wavSpec{tag: 1, ch: 2, rate: 16000, bits: 16, dataSize: u32p(0xFFFFFFFF), riffSize: u32p(0xFFFFFFFF)}, 1e-4},
		{"riff 0xFFFFFFFF, data 0", wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, dataSize: u32p(0), riffSize: u32p(0xFFFFFFFF)}, 1e-4},
		{"trailing garbage", wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, trailing: []byte("garbage\xff\xff\xff\xff")}, 1e-4},
		{"wrong riff size", wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, riffSize: u32p(12)}, 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const frames = 3001
			src := sweep(frames, tc.spec.ch)
			wav := makeWAV(t, tc.spec, src)
			d, err := Decode(context.Background(), wav, tc.spec.rate, Limits{})
			require.NoError(t, err)
			require.Equal(t, FormatWAV, d.Format)
			require.Equal(t, tc.spec.ch, d.SourceChannels)
			require.Equal(t, tc.spec.rate, d.SourceRate)
			require.Len(t, d.Samples, frames)
			require.InDelta(t, float64(frames)/float64(tc.spec.rate), d.Duration, 1e-12)
			for i := 0; i < frames; i++ {
				var want float64
				for c := 0; c < tc.spec.ch; c++ {
					want += src[i*tc.spec.ch+c]
				}
				want /= float64(tc.spec.ch)
				require.InDelta(t, want, float64(d.Samples[i]), tc.tol, "frame %d", i)
			}
		})
	}
}

func TestDecodeWAVG711(t *testing.T) {
	for _, tc := range []struct {
		tag  uint16
		in   []float64
		want []float64
	}{
		{7, []float64{0xFF, 0x7F, 0x00, 0x80}, []float64{0, 0, -32124, 32124}},
		{6, []float64{0xD5, 0x55, 0xAA, 0x2A}, []float64{8, -8, 32256, -32256}},
	} {
		wav := makeWAV(t, wavSpec{tag: tc.tag, ch: 1, rate: 8000, bits: 8}, tc.in)
		d, err := Decode(context.Background(), wav, 8000, Limits{})
		require.NoError(t, err)
		for i, w := range tc.want {
			require.InDelta(t, w/32768, float64(d.Samples[i]), 1e-9, "tag %d byte %#x", tc.tag, int(tc.in[i]))
		}
	}
}

func TestDecodeWAVFloatNaN(t *testing.T) {
	wav := makeWAV(t, wavSpec{tag: 3, ch: 1, rate: 16000, bits: 32}, []float64{math.NaN(), math.Inf(1), 0.5, math.Inf(-1)})
	d, err := Decode(context.Background(), wav, 16000, Limits{})
	require.NoError(t, err)
	require.Equal(t, []float32{0, 0, 0.5, 0}, d.Samples)
}

// TestDecodeWAVRejects: lying and broken headers give the right sentinel and a precise message.
func TestDecodeWAVRejects(t *testing.T) {
	good := wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16}
	with := func(f func(*wavSpec)) wavSpec { s := good; f(&s); return s }
	pcm := sweep(100, 1)
	build := func(s wavSpec) []byte { return makeWAV(t, s, pcm) }
	patch := func(b []byte, off int, v uint32) []byte {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	base := build(good) // fmt at 12 (body 20), data header at 36, samples at 44
	for _, tc := range []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"data claims 4 GB", patch(base, 40, 0xFFFFFF00), ErrInvalidAudio, "claims 4294967040 bytes but only 200 follow"},
		{"data claims one byte too many", patch(base, 40, 201), ErrInvalidAudio, "claims 201 bytes but only 200 follow"},
		{"fmt claims 4 GB", patch(base, 16, 0xFFFFFFF0), ErrInvalidAudio, "fmt chunk claims"},
		{"fmt too short", patch(base, 16, 8), ErrInvalidAudio, "fmt chunk is 8 bytes"},
		{"zero frames", makeWAV(t, good, nil), ErrInvalidAudio, "no complete 2-byte frame"},
		{"half a frame", makeWAV(t, with(func(s *wavSpec) { s.bits = 24 }), nil)[:44], ErrInvalidAudio, "no complete"},
		{"missing fmt", makeWAV(t, good, pcm)[:12], ErrInvalidAudio, "no fmt and no data"},
		{"missing data", build(good)[:36], ErrInvalidAudio, "data chunk missing"},
		{"data before fmt, fmt missing", append([]byte("RIFF\x00\x00\x00\x00WAVEdata\x04\x00\x00\x00\x01\x02\x03\x04"), "LIST\x00\x00\x00\x00"...), ErrInvalidAudio, "fmt chunk missing"},
		{"channels 0", build(with(func(s *wavSpec) { s.ch = 0; s.blockAlign = 2 })), ErrInvalidAudio, "0 channels"},
		{"rate 999", build(with(func(s *wavSpec) { s.rate = 999 })), ErrInvalidAudio, "sample rate 999 Hz"},
		{"rate 800000", build(with(func(s *wavSpec) { s.rate = 800000 })), ErrInvalidAudio, "sample rate 800000 Hz"},
		{"block align mismatch", build(with(func(s *wavSpec) { s.blockAlign = 4 })), ErrInvalidAudio, "block align is 4"},
		{"12-bit pcm", build(with(func(s *wavSpec) { s.bits = 12; s.blockAlign = 2 })), ErrInvalidAudio, "12-bit PCM"},
		{"16-bit float", build(with(func(s *wavSpec) { s.tag = 3 })), ErrInvalidAudio, "16-bit IEEE float"},
		{"ADPCM", build(with(func(s *wavSpec) { s.tag = 2 })), ErrUnsupportedFormat, "Microsoft ADPCM (format tag 0x0002)"},
		{"extensible mp3 subformat", build(with(func(s *wavSpec) { s.tag = 0x55; s.extensible = true })), ErrUnsupportedFormat, "0x0055"},
		{"extensible too short", patch(build(with(func(s *wavSpec) { s.extensible = true })), 16, 18), ErrInvalidAudio, "needs 40"},
		{"junk chunk claims too much", append([]byte("RIFF\x00\x00\x00\x00WAVEjunk\xff\xff\xff\x7f"), make([]byte, 64)...), ErrInvalidAudio, `chunk "junk" at offset 12 claims 2147483647 bytes but only 64 follow`},
		{"header only", []byte("RIFF\x04\x00\x00\x00WAVE"), ErrInvalidAudio, "no fmt and no data"},
		{"riff not wave", []byte("RIFF\x04\x00\x00\x00AVI LIST"), ErrUnsupportedFormat, "not WAVE"},
		{"truncated riff", []byte("RIFF\x04\x00\x00"), ErrInvalidAudio, "too short for a WAV header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(context.Background(), tc.data, 16000, Limits{})
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.msg)
			require.Nil(t, d)
		})
	}
}

// TestDecodeWAVDurationBeforeDecode: the duration limit is enforced from the header, before the
// samples are converted (so the decode allocates nothing proportional to the data).
func TestDecodeWAVDurationBeforeDecode(t *testing.T) {
	wav := makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16}, make([]float64, 16000*61))
	allocs := testing.AllocsPerRun(5, func() {
		_, err := Decode(context.Background(), wav, 16000, Limits{MaxDuration: 60})
		require.ErrorIs(t, err, ErrTooLong)
	})
	require.Less(t, allocs, 10.0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, err := Decode(context.Background(), wav, 16000, Limits{MaxDuration: 60})
	require.ErrorIs(t, err, ErrTooLong)
	runtime.ReadMemStats(&ms)
	require.Less(t, ms.TotalAlloc-before, uint64(4096))
}

// TestDecodeCraftedHeaderMemory: a 1 KB file whose headers claim gigabytes returns quickly with
// ErrInvalidAudio and allocates no more than a few times its size.
func TestDecodeCraftedHeaderMemory(t *testing.T) {
	crafted := [][]byte{}
	for _, id := range []string{"fmt ", "data", "LIST"} {
		b := append([]byte("RIFF\xff\xff\xff\xffWAVE"), id...)
		b = append(b, 0xF0, 0xFF, 0xFF, 0xFF)
		crafted = append(crafted, append(b, make([]byte, 1000)...))
	}
	id3 := append([]byte("ID3\x03\x00\x00\x7f\x7f\x7f\x7f"), make([]byte, 1014)...)
	crafted = append(crafted, id3)
	for i, b := range crafted {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			start := time.Now()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			_, err := Decode(context.Background(), b, 16000, Limits{})
			runtime.ReadMemStats(&ms)
			require.ErrorIs(t, err, ErrInvalidAudio)
			require.Less(t, time.Since(start), time.Second, "a header claiming 4 GB is refused, not read")
			// TotalAlloc counts the whole process (the runtime and other tests allocate too), so
			// the bound is loose: what matters is that a header claiming 4 GB allocates kilobytes.
			require.Less(t, ms.TotalAlloc-before, uint64(64<<10), "allocated %d bytes", ms.TotalAlloc-before)
		})
	}
}
