package audio

import (
	"context"
	"encoding/binary"
	"testing"
)

// fixOggCRCs returns a copy of data with the CRC of every page it can walk recomputed, so that
// fuzzing mutates what the codecs see instead of dying at the CRC check.
func fixOggCRCs(data []byte) []byte {
	b := append([]byte(nil), data...)
	for off := 0; len(b)-off >= oggHeaderLen && string(b[off:off+4]) == "OggS"; {
		nseg := int(b[off+26])
		if len(b)-off < oggHeaderLen+nseg {
			break
		}
		size := oggHeaderLen + nseg
		for _, s := range b[off+oggHeaderLen : off+oggHeaderLen+nseg] {
			size += int(s)
		}
		if size > len(b)-off {
			break
		}
		p := b[off : off+size]
		binary.LittleEndian.PutUint32(p[22:], 0)
		binary.LittleEndian.PutUint32(p[22:], oggCRC(0, p))
		off += size
	}
	return b
}

// shortOgg keeps the header packets and the first n audio packets of an Ogg fixture, each on
// its own page, with granules that make it a valid (short) stream.
func shortOgg(t testing.TB, name, codec string, headers, n int, frames int64) []byte {
	_, pkts := demuxOgg(t, readOggFixture(t, name), codec)
	var pk [][]byte
	var g []int64
	for i, p := range pkts[:headers+n] {
		pk = append(pk, p.data)
		g = append(g, max(0, int64(i-headers+1))*frames)
	}
	g[len(g)-1] -= frames / 3 // some end trimming
	return oggFile(uint32(n), pk, g)
}

func vorbisSeeds(t testing.TB) [][]byte {
	return [][]byte{
		readOggFixture(t, "vorbis_16k_mono_ffmpeg_q1.ogg"),
		shortOgg(t, "vorbis_16k_mono_ffmpeg_q1.ogg", "Vorbis", 3, 6, 128),
		shortOgg(t, "vorbis_44k1_stereo_oggenc_q0.ogg", "Vorbis", 3, 4, 128),
	}
}

func opusSeeds(t testing.TB) [][]byte {
	return [][]byte{
		shortOgg(t, "opus_48k_stereo_opusenc_32k.opus", "Opus", 2, 3, 960),
		shortOgg(t, "opus_16k_mono_opusenc_12k.opus", "Opus", 2, 3, 960),
		shortOgg(t, "opus_48k_mono_ffmpeg_24k.opus", "Opus", 2, 3, 960),
	}
}

func FuzzVorbis(f *testing.F) {
	for _, s := range vorbisSeeds(f) {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDuration: 30}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(context.Background(), fixOggCRCs(data), 16000, lim)
		checkDecodeResult(t, d, err, lim)
	})
}

func FuzzOpus(f *testing.F) {
	for _, s := range opusSeeds(f) {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDuration: 30}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(context.Background(), fixOggCRCs(data), 16000, lim)
		checkDecodeResult(t, d, err, lim)
	})
}

func FuzzWAV(f *testing.F) {
	for _, s := range wavSeeds(f) {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDuration: 30}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeWAV(context.Background(), data, lim)
		if err != nil {
			if p != nil {
				t.Fatalf("result with error %v", err)
			}
			return
		}
		if p.rate < MinSampleRate || p.rate > MaxSampleRate || p.channels < 1 || float64(len(p.mono)) > lim.MaxDuration*float64(p.rate)+1 {
			t.Fatalf("inconsistent WAV result: %d Hz, %d channels, %d frames", p.rate, p.channels, len(p.mono))
		}
	})
}
