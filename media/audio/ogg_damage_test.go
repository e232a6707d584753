package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// demuxOgg collects the packets of an Ogg stream (copies).
func demuxOgg(t testing.TB, data []byte, codec string) (*oggStream, []oggPacket) {
	t.Helper()
	var pkts []oggPacket
	st, err := walkOgg(data, codec, func(p oggPacket) error {
		p.data = bytes.Clone(p.data)
		pkts = append(pkts, p)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, pkts, st.packets)
	return st, pkts
}

// splitOggPages cuts a well-formed Ogg file into its pages (copies).
func splitOggPages(t testing.TB, data []byte) [][]byte {
	t.Helper()
	var pages [][]byte
	for off := 0; off < len(data); {
		require.Equal(t, "OggS", string(data[off:off+4]))
		nseg := int(data[off+26])
		size := oggHeaderLen + nseg
		for _, s := range data[off+oggHeaderLen : off+oggHeaderLen+nseg] {
			size += int(s)
		}
		pages = append(pages, append([]byte(nil), data[off:off+size]...))
		off += size
	}
	return pages
}

// fixOggCRC recomputes a page's CRC after an edit.
func fixOggCRC(p []byte) []byte {
	binary.LittleEndian.PutUint32(p[22:], 0)
	binary.LittleEndian.PutUint32(p[22:], oggCRC(0, p))
	return p
}

// oggPage builds one page holding whole packets (each < 255·255 bytes).
func oggPage(serial, seq uint32, flags byte, granule int64, packets ...[]byte) []byte {
	var lace, body []byte
	for _, pk := range packets {
		n := len(pk)
		for ; n >= 255; n -= 255 {
			lace = append(lace, 255)
		}
		lace = append(lace, byte(n))
		body = append(body, pk...)
	}
	h := make([]byte, oggHeaderLen, oggHeaderLen+len(lace)+len(body))
	copy(h, "OggS")
	h[5] = flags
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], serial)
	binary.LittleEndian.PutUint32(h[18:], seq)
	h[26] = byte(len(lace))
	return fixOggCRC(append(append(h, lace...), body...))
}

// oggFile puts each packet on its own page (BOS first, EOS last) with the given granules.
func oggFile(serial uint32, packets [][]byte, granules []int64) []byte {
	var out []byte
	for i, pk := range packets {
		var flags byte
		if i == 0 {
			flags |= oggFlagBOS
		}
		if i == len(packets)-1 {
			flags |= oggFlagEOS
		}
		out = append(out, oggPage(serial, uint32(i), flags, granules[i], pk)...)
	}
	return out
}

// lsbWriter writes Vorbis's LSB-first bit fields.
type lsbWriter struct {
	b   []byte
	bit uint
}

func (w *lsbWriter) put(v uint64, n uint) *lsbWriter {
	for i := uint(0); i < n; i++ {
		if w.bit%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (w.bit % 8)
		w.bit++
	}
	return w
}

// vorbisPackets returns the id, comment and setup packets of the Vorbis fixture, and its audio.
func vorbisPackets(t testing.TB) (id, comment, setup []byte, audio [][]byte) {
	_, pk := demuxOgg(t, readOggFixture(t, "vorbis_16k_mono_ffmpeg_q1.ogg"), "Vorbis")
	var a [][]byte
	for _, p := range pk[3:] {
		a = append(a, p.data)
	}
	return pk[0].data, pk[1].data, pk[2].data, a
}

func TestDecodeOggDamage(t *testing.T) {
	vorbisFile := readOggFixture(t, "vorbis_44k1_stereo_oggenc_q0.ogg")
	// The Opus fixture re-paged with one packet per page (opusenc packs 45 on one), so pages
	// can be dropped and edited; it decodes exactly as the original (checked below).
	opusStream, opusPackets := demuxOgg(t, readOggFixture(t, "opus_48k_stereo_opusenc_32k.opus"), "Opus")
	lastGranule := opusStream.lastGranule
	var opk [][]byte
	var og []int64
	for i, p := range opusPackets {
		opk = append(opk, p.data)
		og = append(og, max(0, int64(i-1)*960)) // opusenc's 20 ms packets
	}
	og[len(og)-1] = lastGranule
	opusFile := oggFile(0x5EED, opk, og)
	vp := splitOggPages(t, vorbisFile)
	op := splitOggPages(t, opusFile)
	join := func(pages ...[]byte) []byte { return bytes.Join(pages, nil) }
	edit := func(pages [][]byte, i int, f func(p []byte)) []byte {
		cp := make([][]byte, len(pages))
		for j := range pages {
			cp[j] = append([]byte(nil), pages[j]...)
		}
		f(cp[i])
		fixOggCRC(cp[i])
		return join(cp...)
	}
	id, comment, setup, audio := vorbisPackets(t)
	vorbisWith := func(id, comment, setup []byte) []byte {
		pk := append([][]byte{id, comment, setup}, audio...)
		g := make([]int64, len(pk))
		for i := 3; i < len(pk); i++ {
			g[i] = -1
		}
		g[len(g)-1] = 14437
		return oggFile(7, pk, g)
	}
	// A setup header whose single codebook claims 2^24 entries in one ordered run and a
	// 2^24 × 65535 value table: 20 bytes that make the library allocate ~4 TB.
	bomb := (&lsbWriter{b: []byte("\x05vorbis")}).put(0, 8).put(vorbisCodebookSync, 24).put(0xFFFF, 16).
		put(0xFFFFFF, 24).put(1, 1).put(0, 5).put(0xFFFFFF, 24).put(2, 4).put(0, 32).put(0, 32).put(0, 4).put(0, 1).b
	book := func(dims, entries uint64) *lsbWriter {
		return (&lsbWriter{b: []byte("\x05vorbis")}).put(0, 8).put(vorbisCodebookSync, 24).put(dims, 16).put(entries, 24)
	}
	// 2^22 entries in one ordered run of 22-bit codewords: a complete code in 8 bytes, for
	// which the library would build a 38 MB tree.
	budgetBomb := book(1, 1<<22).put(1, 1).put(21, 5).put(1<<22, 23).put(0, 4).put(0, 64).b
	noEntries := book(1, 0).put(0, 1).put(0, 1).put(0, 4).put(0, 64).b
	noDims := book(0, 2).put(0, 1).put(0, 1).put(0, 5).put(0, 5).put(0, 4).put(0, 64).b
	incomplete := book(1, 2).put(0, 1).put(0, 1).put(1, 5).put(1, 5).put(0, 4).put(0, 64).b // two 2-bit codewords
	// Sparse codebook claiming 2^20 entries of which the packet can hold only a few.
	sparse := (&lsbWriter{b: []byte("\x05vorbis")}).put(0, 8).put(vorbisCodebookSync, 24).put(1, 16).
		put(1<<20, 24).put(0, 1).put(1, 1).put(0, 64).b
	badBlock := append([]byte(nil), id...)
	badBlock[28] = 0xE5 // 2^5 < 64
	hugeComments := append([]byte("\x03vorbis\x00\x00\x00\x00"), 0xFF, 0xFF, 0xFF, 0xFF, 1)

	opusHead := func(f func(h []byte)) []byte {
		return edit(op, 0, func(p []byte) { f(p[oggHeaderLen+int(p[26]):]) })
	}

	for _, tc := range []struct {
		name string
		data []byte
		err  error
		msg  string
	}{
		{"truncated mid-page", vorbisFile[:len(vorbisFile)-100], ErrInvalidAudio, "truncated: page"},
		{"truncated in a page header", vorbisFile[:len(vp[0])+10], ErrInvalidAudio, "header at byte"},
		{"truncated at a page boundary", join(vp[:len(vp)-1]...), ErrInvalidAudio, "without its end-of-stream page"},
		{"headers only", join(op[:2]...), ErrInvalidAudio, "without its end-of-stream page"},
		{"crc mismatch", func() []byte { b := bytes.Clone(opusFile); b[len(op[0])+len(op[1])+60] ^= 1; return b }(), ErrInvalidAudio, "fails its CRC check"},
		{"junk between pages", join(op[0], op[1], []byte("junk!"), join(op[2:]...)), ErrInvalidAudio, "lost sync"},
		{"page lost", join(append(op[:2:2], op[3:]...)...), ErrInvalidAudio, "has a gap"},
		{"second logical stream", edit(op, 2, func(p []byte) { p[14] ^= 0xFF }), ErrUnsupportedFormat, "multiplexed Ogg"},
		{"chained streams", join(opusFile, opusFile), ErrUnsupportedFormat, "chained Ogg"},
		{"no BOS flag", edit(op, 0, func(p []byte) { p[5] = 0 }), ErrInvalidAudio, "beginning-of-stream"},
		{"opus 6 channels", opusHead(func(h []byte) { h[9], h[18] = 6, 1 }), ErrUnsupportedFormat, "multichannel Ogg Opus (6 channels, mapping family 1)"},
		{"opus 0 channels", opusHead(func(h []byte) { h[9] = 0 }), ErrInvalidAudio, "0 channels"},
		{"opus version 1.0", opusHead(func(h []byte) { h[8] = 0x10 }), ErrUnsupportedFormat, "version 1.0"},
		{"opus tags missing", edit(op, 1, func(p []byte) { p[oggHeaderLen+int(p[26])] = 'X' }), ErrInvalidAudio, "OpusTags"},
		{"granules leave no audio", edit(op, len(op)-1, func(p []byte) { binary.LittleEndian.PutUint64(p[6:], 100) }), ErrInvalidAudio, "leave no audio"},
		{"vorbis block size", vorbisWith(badBlock, comment, setup), ErrInvalidAudio, "block sizes 2^5 and 2^14"},
		{"vorbis setup bomb", vorbisWith(id, comment, bomb), ErrInvalidAudio, "codebook 0 has 16777215 entries of dimension 65535"},
		{"vorbis setup budget", vorbisWith(id, comment, budgetBomb), ErrInvalidAudio, "would need more than 32 MiB"},
		{"vorbis codebook without entries", vorbisWith(id, comment, noEntries), ErrInvalidAudio, "codebook 0 has 0 entries"},
		{"vorbis codebook of dimension 0", vorbisWith(id, comment, noDims), ErrInvalidAudio, "of dimension 0"},
		{"vorbis incomplete huffman code", vorbisWith(id, comment, incomplete), ErrInvalidAudio, "not a complete prefix code"},
		{"vorbis setup claims more entries than it holds", vorbisWith(id, comment, sparse), ErrInvalidAudio, "setup header is truncated"},
		{"vorbis setup missing", vorbisWith(id, comment, []byte("\x04vorbis")), ErrInvalidAudio, "setup header is missing"},
		{"vorbis comment missing", vorbisWith(id, []byte("nope"), setup), ErrInvalidAudio, "comment header is missing"},
		{"ogg speex", oggFile(1, [][]byte{[]byte("Speex   1.2rc1\x00\x00\x00\x00")}, []int64{0}), ErrUnsupportedFormat, "Ogg Speex is not supported; send WAV (PCM or IEEE float), MP3, FLAC, Ogg Vorbis, Ogg Opus, WebM (Opus) or, when the server has ffmpeg, M4A/MP4 (AAC)"},
		{"ogg flac", oggFile(1, [][]byte{[]byte("\x7fFLAC\x01\x00\x00\x01fLaC")}, []int64{0}), ErrUnsupportedFormat, "FLAC in Ogg"},
		{"ogg page header cut", []byte("OggS\x00\x02\x00\x00"), ErrInvalidAudio, "too short for an Ogg page header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(context.Background(), tc.data, 16000, Limits{MaxBytes: 1 << 20, MaxDuration: 30})
			require.Nil(t, d)
			require.ErrorIs(t, err, tc.err)
			require.Contains(t, err.Error(), tc.msg)
		})
	}

	t.Run("comment header claiming 2^32 comments is never parsed", func(t *testing.T) {
		d, err := Decode(context.Background(), vorbisWith(id, hugeComments, setup), 0, Limits{})
		require.NoError(t, err)
		require.Len(t, d.Samples, 14437)
	})
	t.Run("re-paged opus decodes exactly", func(t *testing.T) {
		d, err := Decode(context.Background(), opusFile, 0, Limits{})
		require.NoError(t, err)
		require.Len(t, d.Samples, 43210)
		orig, err := Decode(context.Background(), readOggFixture(t, "opus_48k_stereo_opusenc_32k.opus"), 0, Limits{})
		require.NoError(t, err)
		require.Equal(t, orig.Samples, d.Samples)
	})
	t.Run("bytes after the end of stream are ignored", func(t *testing.T) {
		d, err := Decode(context.Background(), join(opusFile, []byte("trailing junk, no Ogg page")), 0, Limits{})
		require.NoError(t, err)
		require.Len(t, d.Samples, 43210)
	})
	t.Run("duration limit from the granule before decoding", func(t *testing.T) {
		_, err := Decode(context.Background(), opusFile, 16000, Limits{MaxDuration: 0.5})
		require.ErrorIs(t, err, ErrTooLong)
		require.Contains(t, err.Error(), "audio lasts 0.900 s; the limit is 0.5 s")
	})
	t.Run("lying granule beyond the limit", func(t *testing.T) {
		b := edit(op, len(op)-1, func(p []byte) { binary.LittleEndian.PutUint64(p[6:], 1<<40) })
		_, err := Decode(context.Background(), b, 16000, Limits{MaxDuration: 30})
		require.ErrorIs(t, err, ErrTooLong)
		// Without a limit it decodes what is there: a granule past the end trims nothing.
		d, err := Decode(context.Background(), b, 0, Limits{})
		require.NoError(t, err)
		require.Greater(t, len(d.Samples), int(lastGranule)-312)
		require.LessOrEqual(t, len(d.Samples), int(lastGranule)-312+960) // the last packet's padding
	})
	t.Run("opus output gain", func(t *testing.T) {
		base, err := Decode(context.Background(), opusFile, 0, Limits{})
		require.NoError(t, err)
		louder, err := Decode(context.Background(), opusHead(func(h []byte) { binary.LittleEndian.PutUint16(h[16:], 1541) }), 0, Limits{})
		require.NoError(t, err)
		require.Len(t, louder.Samples, len(base.Samples))
		gain := float32(math.Pow(10, 1541.0/256/20)) // 1541 in Q7.8 dB: +6.02 dB, ×1.99988
		for i := range base.Samples {
			require.InDelta(t, gain*base.Samples[i], louder.Samples[i], 1e-6)
		}
	})
	t.Run("resampled to 16 kHz", func(t *testing.T) {
		for _, name := range []string{"vorbis_44k1_stereo_oggenc_q0.ogg", "opus_48k_stereo_opusenc_32k.opus"} {
			d, err := Decode(context.Background(), readOggFixture(t, name), 16000, Limits{})
			require.NoError(t, err)
			require.Equal(t, 16000, d.SampleRate)
			want := int(math.Round(d.Duration * 16000))
			require.InDelta(t, want, len(d.Samples), 1)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := decodeOpus(ctx, opusFile, Limits{})
		require.ErrorIs(t, err, context.Canceled)
		_, err = decodeVorbis(ctx, vorbisFile, Limits{})
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestOggClock(t *testing.T) {
	pk := func(page int, g int64) oggPacket { return oggPacket{granule: g, page: page} }
	for _, tc := range []struct {
		name       string
		pkts       []oggPacket
		counts     []int
		preSkip    int
		pages      int
		last       int64
		head, tail int64
		err        bool
	}{
		{"exact", []oggPacket{pk(2, -1), pk(2, 2000)}, []int{1000, 1000}, 0, 4, 2000, 0, 2000, false},
		{"end trim on a later page", []oggPacket{pk(2, 1000), pk(3, 1500)}, []int{1000, 1000}, 0, 4, 1500, 0, 1500, false},
		{"start trim", []oggPacket{pk(2, 700), pk(3, 1700)}, []int{1000, 1000}, 0, 4, 1700, 300, 2000, false},
		{"single page: shortfall is end trim", []oggPacket{pk(2, -1), pk(2, 1500)}, []int{1000, 1000}, 0, 3, 1500, 0, 1500, false},
		{"stream starting later", []oggPacket{pk(2, 5000), pk(3, 6000)}, []int{1000, 1000}, 0, 4, 6000, 0, 2000, false},
		{"opus pre-skip and end trim", []oggPacket{pk(2, 960), pk(3, 1500)}, []int{960, 960}, 312, 4, 1500, 312, 1500, false},
		{"granule beyond the data", []oggPacket{pk(2, 1000), pk(3, 1<<40)}, []int{1000, 1000}, 0, 4, 1 << 40, 0, 2000, false},
		{"nothing left", []oggPacket{pk(2, 960), pk(3, 1000)}, []int{960, 960}, 1200, 4, 1000, 0, 0, true},
		{"huge start trim", []oggPacket{pk(2, -1<<40+1), pk(3, 1000)}, []int{1000, 1000}, 0, 4, 1000, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c oggClock
			for i, p := range tc.pkts {
				c.add(p, tc.counts[i], tc.pages-1)
			}
			head, tail, err := c.trim(tc.preSkip, tc.last)
			if tc.err {
				require.ErrorIs(t, err, ErrInvalidAudio)
				return
			}
			require.NoError(t, err)
			require.Equal(t, [2]int64{tc.head, tc.tail}, [2]int64{head, tail})
		})
	}
}
