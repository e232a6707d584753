package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// withoutFFmpeg makes AAC and WebM/Vorbis a 415 for the rest of t: fuzzing spawns no ffmpeg
// processes (what ffmpeg writes back goes through our WAV parser, which FuzzWAV covers).
func withoutFFmpeg(t testing.TB) {
	old := ffmpegBinary
	ffmpegBinary = func() string { return "" }
	t.Cleanup(func() { ffmpegBinary = old })
}

// webmForm selects how buildWebM writes a file.
type webmForm int

const (
	webmLive       webmForm = iota // MediaRecorder: unknown sizes, SimpleBlocks, no end trimming
	webmFile                       // known sizes, last packet in a BlockGroup with DiscardPadding
	webmXiphLaced                  // known sizes, packets laced in pairs (Xiph lacing)
	webmEBMLLaced                  // same, EBML lacing
	webmFixedLaced                 // same, fixed-size lacing (only when the pair's sizes agree)
)

// buildWebM writes an Opus track's packets as a WebM file of the given form.
func buildWebM(tr *webmTrack, packets [][]byte, form webmForm) []byte {
	vint := func(n uint64) []byte { // 8-byte EBML size
		return []byte{0x01, byte(n >> 48), byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	id := func(v uint32) []byte {
		var b []byte
		for s := 24; s >= 0; s -= 8 {
			if c := byte(v >> s); c != 0 || len(b) > 0 {
				b = append(b, c)
			}
		}
		return b
	}
	el := func(v uint32, payload ...[]byte) []byte {
		body := bytes.Join(payload, nil)
		return append(append(id(v), vint(uint64(len(body)))...), body...)
	}
	unknown := []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	u := func(v uint64) []byte { return []byte{byte(v >> 8), byte(v)} }
	entry := el(mkvTrackEntry, el(mkvTrackNumber, u(tr.number)), el(mkvTrackType, u(2)), el(mkvCodecID, []byte("A_OPUS")),
		el(mkvCodecPrivate, tr.private), el(mkvAudio, el(mkvChannels, u(uint64(tr.channels)))))
	head := el(mkvInfo, el(0x2AD7B1, u(1000))) // TimecodeScale
	head = append(head, el(mkvTracks, entry)...)
	var clusters [][]byte
	var cur []byte
	block := func(flags byte, body []byte) []byte {
		return append([]byte{0x80 | byte(tr.number), 0, 0, flags}, body...)
	}
	for i := 0; i < len(packets); i++ {
		p := packets[i]
		switch {
		case form == webmFile && i == len(packets)-1:
			cur = append(cur, el(mkvBlockGroup, el(mkvBlock, block(0, p)), el(mkvDiscardPadding, []byte{0x1e, 0x84, 0x80}))...) // 2 ms
		case form >= webmXiphLaced && i+1 < len(packets):
			q := packets[i+1]
			var lace []byte
			flags := byte(0x80)
			switch form {
			case webmXiphLaced:
				flags |= 0x02
				n := len(p)
				for ; n >= 255; n -= 255 {
					lace = append(lace, 255)
				}
				lace = append(lace, byte(n))
			case webmEBMLLaced:
				flags |= 0x06
				lace = []byte{0x40 | byte(len(p)>>8), byte(len(p))}
			case webmFixedLaced:
				if len(p) != len(q) {
					cur = append(cur, el(mkvSimpleBlock, block(0x80, p))...)
					continue
				}
				flags |= 0x04
			}
			body := append(append(append([]byte{1}, lace...), p...), q...)
			cur = append(cur, el(mkvSimpleBlock, block(flags, body))...)
			i++
		default:
			cur = append(cur, el(mkvSimpleBlock, block(0x80, p))...)
		}
		if len(cur) > 2000 || i >= len(packets)-1 {
			clusters = append(clusters, append(el(mkvTimecode, u(0)), cur...))
			cur = nil
		}
	}
	out := el(ebmlHeaderID, el(ebmlDocType, []byte("webm")))
	if form == webmLive {
		out = append(append(out, id(mkvSegment)...), unknown...)
		out = append(out, head...)
		for _, c := range clusters {
			out = append(append(append(out, id(mkvCluster)...), unknown...), c...)
		}
		return out
	}
	body := head
	for _, c := range clusters {
		body = append(body, el(mkvCluster, c)...)
	}
	return append(out, el(mkvSegment, body)...)
}

// webmFixturePackets demuxes a WebM fixture.
func webmFixturePackets(t testing.TB, name string) (*webmTrack, [][]byte) {
	var track *webmTrack
	var packets [][]byte
	_, err := walkWebM(readBrowserFixture(t, name), func(tr *webmTrack) error { track = tr; return nil }, func(p webmPacket) error {
		packets = append(packets, p.data)
		return nil
	})
	require.NoError(t, err)
	return track, packets
}

// TestWebMForms: the same packets written with every lacing and in live form decode to the same
// samples; DiscardPadding trims the end.
func TestWebMForms(t *testing.T) {
	tr, packets := webmFixturePackets(t, "webm_opus_48k_stereo_64k.webm")
	plain, err := Decode(context.Background(), buildWebM(tr, packets, webmLive), 0, Limits{})
	require.NoError(t, err)
	require.Equal(t, len(packets)*960-312, len(plain.Samples))
	for _, form := range []webmForm{webmFile, webmXiphLaced, webmEBMLLaced, webmFixedLaced} {
		d, err := Decode(context.Background(), buildWebM(tr, packets, form), 0, Limits{})
		require.NoError(t, err, "form %d", form)
		if form == webmFile {
			require.True(t, slices.Equal(plain.Samples[:len(plain.Samples)-96], d.Samples), "2 ms of DiscardPadding = 96 samples: %d", len(d.Samples))
			continue
		}
		require.True(t, slices.Equal(plain.Samples, d.Samples), "form %d: %d samples", form, len(d.Samples))
	}
}

// TestWebMChannelsFromOpusHead: the channel count is OpusHead's; a track whose Channels element
// says otherwise (or leaves it out: default 1) still decodes every channel.
func TestWebMChannelsFromOpusHead(t *testing.T) {
	tr, packets := webmFixturePackets(t, "webm_opus_48k_stereo_64k.webm")
	mono := *tr
	mono.channels = 1
	want, err := Decode(context.Background(), buildWebM(tr, packets, webmLive), 0, Limits{})
	require.NoError(t, err)
	got, err := Decode(context.Background(), buildWebM(&mono, packets, webmLive), 0, Limits{})
	require.NoError(t, err)
	require.Equal(t, 2, got.SourceChannels)
	require.True(t, slices.Equal(want.Samples, got.Samples))
}

// webmSeeds are short WebM files (a few packets of each fixture, in every form) for fuzzing.
func webmSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for i, name := range []string{"webm_opus_48k_mono_32k.webm", "webm_opus_48k_stereo_64k.webm", "webm_opus_16k_mono_voip_12k.webm"} {
		tr, packets := webmFixturePackets(t, name)
		out = append(out, buildWebM(tr, packets[:4], webmForm(i%2)))
	}
	tr, packets := webmFixturePackets(t, "webm_opus_48k_mono_32k.webm")
	for _, form := range []webmForm{webmXiphLaced, webmEBMLLaced, webmFixedLaced} {
		out = append(out, buildWebM(tr, packets[60:64], form))
	}
	return out
}

// shrinkMP4 keeps an MP4 file's boxes but cuts every mdat to n bytes (the walker does not read
// the samples; ffmpeg would find them missing).
func shrinkMP4(t testing.TB, data []byte, n int) []byte {
	var out []byte
	require.NoError(t, mp4Children(data, 0, len(data), func(b mp4Box) error {
		if b.typ != "mdat" {
			out = append(out, data[b.off:b.end]...)
			return nil
		}
		var h [8]byte
		binary.BigEndian.PutUint32(h[:], uint32(8+n))
		copy(h[4:], "mdat")
		out = append(append(out, h[:]...), data[b.data:b.data+min(n, b.end-b.data)]...)
		return nil
	}))
	return out
}

func mp4Seeds(t testing.TB) [][]byte {
	m4a := readBrowserFixture(t, "m4a_aac_44k1_stereo_96k.m4a")
	frag := readBrowserFixture(t, "mp4_aac_48k_mono_64k_fragmented.mp4")
	// The fragmented file: its header, first fragment and the tail (mfra).
	var firstFrag []byte
	fragments := 0
	require.NoError(t, mp4Children(frag, 0, len(frag), func(b mp4Box) error {
		if b.typ == "moof" {
			fragments++
		}
		if fragments <= 1 || b.typ == "mfra" {
			firstFrag = append(firstFrag, frag[b.off:b.end]...)
		}
		return nil
	}))
	return [][]byte{shrinkMP4(t, m4a, 32), shrinkMP4(t, firstFrag, 32)}
}

func FuzzWebM(f *testing.F) { fuzzDecode(f, webmSeeds(f), nil) }

// FuzzMP4 drives the MP4 walker through Decode with ffmpeg disabled: every input ends in one
// client error (a valid file in a 415 naming ffmpeg), never a panic or a huge allocation.
func FuzzMP4(f *testing.F) {
	fuzzDecode(f, mp4Seeds(f), func(t *testing.T, data []byte, err error) {
		if _, werr := walkMP4(data); werr == nil && len(data) >= 8 && string(data[4:8]) == "ftyp" {
			require.True(t, errors.Is(err, ErrUnsupportedFormat) || errors.Is(err, ErrTooLong), "%v", err)
		}
	})
}
