package audio

import (
	"context"
	"fmt"
)

// WebM / Matroska demuxing (what browsers' MediaRecorder sends: Chrome and Firefox write
// WebM with Opus). The demuxer is our own, like the Ogg one: every element is bounds-checked
// against its parent and the real input, only the elements audio needs are read, packets are
// sub-slices of the input, and the stream is walked twice (the first walk validates the
// structure and adds up the packets' durations from their TOC bytes, so the duration limit is
// checked before anything is decoded). Segments and clusters of unknown size (MediaRecorder
// writes them while recording) end where an element that cannot be their child begins.
// The first audio track is decoded; video and other tracks are skipped. Opus is decoded by
// pion/opus (opus.go); other codecs go to ffmpeg when it is installed (ffmpeg.go).

// Matroska element IDs (with their length markers, as written).
const (
	ebmlHeaderID      = 0x1A45DFA3
	ebmlDocType       = 0x4282
	mkvSegment        = 0x18538067
	mkvSeekHead       = 0x114D9B74
	mkvInfo           = 0x1549A966
	mkvTracks         = 0x1654AE6B
	mkvTrackEntry     = 0xAE
	mkvTrackNumber    = 0xD7
	mkvTrackType      = 0x83
	mkvCodecID        = 0x86
	mkvCodecPrivate   = 0x63A2
	mkvCodecDelay     = 0x56AA
	mkvAudio          = 0xE1
	mkvChannels       = 0x9F
	mkvContentEncs    = 0x6D80
	mkvCluster        = 0x1F43B675
	mkvTimecode       = 0xE7
	mkvSimpleBlock    = 0xA3
	mkvBlockGroup     = 0xA0
	mkvBlock          = 0xA1
	mkvDiscardPadding = 0x75A2
	mkvCues           = 0x1C53BB6B
	mkvTags           = 0x1254C367
	mkvChapters       = 0x1043A770
	mkvAttachments    = 0x1941A469
	mkvVoid           = 0xEC
	mkvCRC32          = 0xBF
)

// clusterChildren are the IDs that may appear inside a Cluster; anything else ends a cluster of
// unknown size.
var clusterChildren = map[uint32]bool{mkvTimecode: true, mkvSimpleBlock: true, mkvBlockGroup: true,
	0xA7 /* Position */ : true, 0xAB /* PrevSize */ : true, 0x5854 /* SilentTracks */ : true,
	0xAF /* EncryptedBlock */ : true, mkvVoid: true, mkvCRC32: true}

// segmentChildren are the top-level elements of a Segment; anything else ends a segment of
// unknown size (a second segment begins, or trailing junk).
var segmentChildren = map[uint32]bool{mkvSeekHead: true, mkvInfo: true, mkvTracks: true, mkvCluster: true,
	mkvCues: true, mkvTags: true, mkvChapters: true, mkvAttachments: true, mkvVoid: true, mkvCRC32: true}

// webmTrack is the audio track decoded.
type webmTrack struct {
	number     uint64
	codec      string
	private    []byte
	codecDelay uint64 // ns
	channels   int
	encoded    bool // ContentEncodings: compressed or encrypted
}

// webmPacket is one frame of the audio track.
type webmPacket struct {
	data           []byte
	discardPadding int64 // ns to drop from the end of this packet's output (BlockGroup)
	index          int
}

// webmStream is what a walk found.
type webmStream struct {
	track   *webmTrack
	packets int
}

// walkWebM validates the file and calls emit for each packet of the first audio track. The
// track is known (and passed to onTrack) before the first packet.
func walkWebM(data []byte, onTrack func(*webmTrack) error, emit func(webmPacket) error) (*webmStream, error) {
	st := &webmStream{}
	e, err := readEBMLElem(data, 0, len(data))
	if err != nil {
		return nil, err
	}
	if e.id != ebmlHeaderID || e.unknownLen {
		return nil, fmt.Errorf("%w: WebM file does not start with an EBML header", ErrInvalidAudio)
	}
	doc := ""
	if err := ebmlChildren(data, e, func(c ebmlElem) error {
		if c.id == ebmlDocType {
			doc = string(data[c.data:c.end])
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if doc != "webm" && doc != "matroska" {
		return nil, fmt.Errorf("%w: EBML document type %q is not WebM or Matroska", ErrUnsupportedFormat, doc)
	}
	off := e.end
	for off < len(data) && data[off] == 0 { // some muxers pad with zeros
		off++
	}
	seg, err := readEBMLElem(data, off, len(data))
	if err != nil {
		return nil, err
	}
	if seg.id != mkvSegment {
		return nil, fmt.Errorf("%w: WebM file has no Segment after its EBML header (element 0x%X at byte %d)", ErrInvalidAudio, seg.id, seg.off)
	}
	for off = seg.data; off < seg.end; {
		c, err := readEBMLElem(data, off, seg.end)
		if err != nil {
			return nil, err
		}
		if seg.unknownLen && !segmentChildren[c.id] {
			break // the segment of unknown size ends here
		}
		switch c.id {
		case mkvTracks:
			if st.track != nil {
				return nil, fmt.Errorf("%w: WebM file has two Tracks elements", ErrInvalidAudio)
			}
			if st.track, err = webmAudioTrack(data, c); err != nil {
				return nil, err
			}
			if onTrack != nil {
				if err := onTrack(st.track); err != nil {
					return nil, err
				}
			}
		case mkvCluster:
			if st.track == nil {
				return nil, fmt.Errorf("%w: WebM cluster at byte %d comes before the track list (Tracks)", ErrInvalidAudio, c.off)
			}
			if c.unknownLen {
				c.end = clusterEnd(data, c)
			}
			if err := webmCluster(data, c, st, emit); err != nil {
				return nil, err
			}
		}
		if c.unknownLen && c.id != mkvCluster {
			return nil, fmt.Errorf("%w: WebM element 0x%X at byte %d has an unknown size", ErrInvalidAudio, c.id, c.off)
		}
		off = c.end
	}
	if st.track == nil {
		return nil, fmt.Errorf("%w: WebM file has no track list (Tracks)", ErrInvalidAudio)
	}
	return st, nil
}

// clusterEnd finds where a cluster of unknown size ends: at the first element that cannot be
// one of its children, or at the end of the data.
func clusterEnd(data []byte, c ebmlElem) int {
	off := c.data
	for off < c.end {
		e, err := readEBMLElem(data, off, c.end)
		if err != nil || e.unknownLen || !clusterChildren[e.id] {
			return off // an error here is reported by webmCluster or the segment loop
		}
		off = e.end
	}
	return off
}

// webmAudioTrack picks the first audio track (TrackType 2) of a Tracks element.
func webmAudioTrack(data []byte, tracks ebmlElem) (*webmTrack, error) {
	var found *webmTrack
	err := ebmlChildren(data, tracks, func(te ebmlElem) error {
		if te.id != mkvTrackEntry || found != nil {
			return nil
		}
		t := &webmTrack{channels: 1}
		var typ uint64
		err := ebmlChildren(data, te, func(c ebmlElem) error {
			var err error
			switch c.id {
			case mkvTrackNumber:
				t.number, err = ebmlUint(data, c)
			case mkvTrackType:
				typ, err = ebmlUint(data, c)
			case mkvCodecID:
				t.codec = string(data[c.data:c.end])
			case mkvCodecPrivate:
				t.private = data[c.data:c.end]
			case mkvCodecDelay:
				t.codecDelay, err = ebmlUint(data, c)
			case mkvContentEncs:
				t.encoded = true
			case mkvAudio:
				err = ebmlChildren(data, c, func(a ebmlElem) error {
					if a.id == mkvChannels {
						n, err := ebmlUint(data, a)
						if err != nil {
							return err
						}
						if n == 0 || n > 255 {
							return fmt.Errorf("%w: WebM audio track declares %d channels", ErrInvalidAudio, n)
						}
						t.channels = int(n)
					}
					return nil
				})
			}
			return err
		})
		if err != nil {
			return err
		}
		if typ == 2 {
			if t.number == 0 {
				return fmt.Errorf("%w: WebM audio track has no track number", ErrInvalidAudio)
			}
			found = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%w: WebM file has no audio track", ErrInvalidAudio)
	}
	return found, nil
}

// webmCluster emits the audio track's packets of one cluster.
func webmCluster(data []byte, cl ebmlElem, st *webmStream, emit func(webmPacket) error) error {
	return ebmlChildren(data, cl, func(c ebmlElem) error {
		switch c.id {
		case mkvSimpleBlock:
			return webmBlock(data[c.data:c.end], c.off, 0, st, emit)
		case mkvBlockGroup:
			var block []byte
			var blockOff int
			var pad int64
			err := ebmlChildren(data, c, func(g ebmlElem) error {
				var err error
				switch g.id {
				case mkvBlock:
					block, blockOff = data[g.data:g.end], g.off
				case mkvDiscardPadding:
					pad, err = ebmlInt(data, g)
				}
				return err
			})
			if err != nil {
				return err
			}
			if block == nil {
				return fmt.Errorf("%w: WebM block group at byte %d has no Block", ErrInvalidAudio, c.off)
			}
			return webmBlock(block, blockOff, pad, st, emit)
		}
		return nil
	})
}

// webmBlock splits one (Simple)Block of the audio track into its frames (Matroska lacing).
func webmBlock(b []byte, off int, pad int64, st *webmStream, emit func(webmPacket) error) error {
	track, n, _, ok := readEBMLVint(b)
	if !ok || len(b) < n+3 {
		return fmt.Errorf("%w: WebM block at byte %d is too short", ErrInvalidAudio, off)
	}
	if track != st.track.number {
		return nil
	}
	flags := b[n+2]
	b = b[n+3:]
	var sizes []int
	switch lacing := flags & 0x06; lacing {
	case 0:
		sizes = []int{len(b)}
	default:
		if len(b) < 1 {
			return fmt.Errorf("%w: WebM laced block at byte %d is too short", ErrInvalidAudio, off)
		}
		count := int(b[0]) + 1
		b = b[1:]
		sizes = make([]int, count)
		total := 0
		switch lacing {
		case 0x02: // Xiph
			for i := 0; i < count-1; i++ {
				for {
					if len(b) == 0 {
						return fmt.Errorf("%w: WebM block at byte %d: Xiph lacing runs past the block", ErrInvalidAudio, off)
					}
					v := int(b[0])
					b = b[1:]
					sizes[i] += v
					if v < 255 {
						break
					}
				}
				total += sizes[i]
			}
		case 0x06: // EBML
			v, l, _, ok := readEBMLVint(b)
			if !ok || v > uint64(len(b)) {
				return fmt.Errorf("%w: WebM block at byte %d: bad EBML lacing", ErrInvalidAudio, off)
			}
			b = b[l:]
			sizes[0] = int(v)
			total = sizes[0]
			for i := 1; i < count-1; i++ {
				u, l, _, ok := readEBMLVint(b)
				if !ok {
					return fmt.Errorf("%w: WebM block at byte %d: bad EBML lacing", ErrInvalidAudio, off)
				}
				b = b[l:]
				d := int64(u) - (1<<(7*l-1) - 1) // signed difference
				sizes[i] = sizes[i-1] + int(d)
				if sizes[i] < 0 || sizes[i] > len(b) {
					return fmt.Errorf("%w: WebM block at byte %d: bad EBML lacing", ErrInvalidAudio, off)
				}
				total += sizes[i]
			}
		case 0x04: // fixed size
			if len(b)%count != 0 {
				return fmt.Errorf("%w: WebM block at byte %d: %d bytes do not split into %d equal frames", ErrInvalidAudio, off, len(b), count)
			}
			for i := range sizes {
				sizes[i] = len(b) / count
			}
			total = len(b) - sizes[count-1]
		}
		if total > len(b) {
			return fmt.Errorf("%w: WebM block at byte %d: laced frames run past the block", ErrInvalidAudio, off)
		}
		sizes[count-1] = len(b) - total
	}
	for i, sz := range sizes {
		p := webmPacket{data: b[:sz], index: st.packets}
		if i == len(sizes)-1 {
			p.discardPadding = pad
		}
		b = b[sz:]
		st.packets++
		if err := emit(p); err != nil {
			return err
		}
	}
	return nil
}

// decodeWebM decodes the first audio track of a WebM/Matroska file.
func decodeWebM(ctx context.Context, data []byte, lim Limits) (p *pcm, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w: corrupt Opus data in WebM (decoder failed: %v)", ErrInvalidAudio, r)
		}
	}()
	var head opusHead
	var preSkip int
	total := int64(0)
	codec := ""
	st, err := walkWebM(data, func(t *webmTrack) error {
		if t.encoded {
			return fmt.Errorf("%w: WebM audio track is compressed or encrypted (ContentEncodings)", ErrUnsupportedFormat)
		}
		if codec = t.codec; codec != "A_OPUS" {
			return nil // validated by this walk, decoded by ffmpeg
		}
		h, err := parseOpusHead(t.private)
		if err != nil {
			return fmt.Errorf("WebM Opus track's CodecPrivate: %w", err)
		}
		// OpusHead's pre-skip, as libopusfile and ffmpeg apply it. Matroska's CodecDelay should
		// say the same, but ffmpeg 5.1 writes it wrong for sources below 48 kHz (104 samples
		// for a pre-skip of 312 at 16 kHz), so it is not used.
		head, preSkip = h, h.preSkip
		// The channel count is OpusHead's, as libopus-based decoders take it; the track's
		// Channels element (default 1, often left out) is informational.
		return nil
	}, func(pk webmPacket) error {
		if codec != "A_OPUS" {
			return nil
		}
		n, ok := opusPacketFrames(pk.data)
		if !ok {
			return fmt.Errorf("%w: WebM Opus packet %d is empty or has an invalid TOC", ErrInvalidAudio, pk.index)
		}
		total += int64(n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if codec != "A_OPUS" {
		name := "WebM/Matroska with " + webmCodecName(codec) + " audio"
		if st.packets == 0 {
			return nil, fmt.Errorf("%w: %s has no audio packets", ErrInvalidAudio, name)
		}
		return decodeFFmpeg(ctx, data, lim, "matroska", name, 0)
	}
	if st.packets == 0 {
		return nil, fmt.Errorf("%w: WebM Opus track has no audio packets", ErrInvalidAudio)
	}
	if err := checkDuration(total-int64(preSkip), opusRate, lim); err != nil {
		return nil, err
	}
	// The packets decode to at most total frames (checked below), pre-skip included.
	if err := lim.meter.need(total, opusRate); err != nil {
		return nil, err
	}
	dec, err := newOpusPackets(head, total)
	if err != nil {
		return nil, err
	}
	_, err = walkWebM(data, nil, func(pk webmPacket) error {
		if pk.index%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		before := len(dec.mono)
		n, err := dec.decode(pk.data, pk.index)
		if err != nil {
			return err
		}
		if int64(len(dec.mono)) > total {
			return fmt.Errorf("%w: WebM Opus packet %d decoded to more samples than the packets declare", ErrInvalidAudio, pk.index)
		}
		if pk.discardPadding > 0 {
			drop := int(min(int64(n), (pk.discardPadding*opusRate+500_000_000)/1_000_000_000))
			dec.mono = dec.mono[:before+n-drop]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if preSkip >= len(dec.mono) {
		return nil, fmt.Errorf("%w: WebM Opus track holds %d samples, no more than its pre-skip (%d)", ErrInvalidAudio, len(dec.mono), preSkip)
	}
	return &pcm{mono: dec.mono[preSkip:], rate: opusRate, channels: head.channels}, nil
}

// webmCodecName turns a Matroska codec ID into a name for messages.
func webmCodecName(id string) string {
	switch id {
	case "A_VORBIS":
		return "Vorbis"
	case "A_AAC", "A_AAC/MPEG4/LC", "A_AAC/MPEG2/LC":
		return "AAC"
	case "A_FLAC":
		return "FLAC"
	case "A_MPEG/L3":
		return "MP3"
	case "A_PCM/INT/LIT", "A_PCM/FLOAT/IEEE":
		return "PCM"
	case "":
		return "no codec ID"
	}
	return fmt.Sprintf("%q", id)
}
