package audio

import (
	"context"
	"encoding/binary"
	"fmt"
)

// MP4 / M4A (ISO base media file format; what Safari's MediaRecorder and iPhones' voice memos
// write, with AAC audio). Our own box walker validates the structure before anything is decoded:
// every box is bounds-checked against its parent and the real input, the movie header (moov)
// and media data (mdat) must be there, and the first sound track's codec and duration are read
// (mdhd, or mehd for fragmented files) so the duration limit is checked before decoding. No
// permissively licensed pure-Go AAC decoder exists (docs/AUDIO.md), so the audio itself is
// decoded by ffmpeg when it is installed (ffmpeg.go); without it the answer is a 415 naming
// what is missing.

// mp4Box is one box: its type and where its payload starts and ends.
type mp4Box struct {
	typ       string
	off       int
	data, end int
}

// mp4Info is what the walk found.
type mp4Info struct {
	moov, mdat, fragmented bool
	audio                  bool    // a track whose handler is 'soun'
	codec                  string  // sample entry type of the first sound track: "mp4a", "alac", ...
	oti                    byte    // MPEG-4 objectTypeIndication of an mp4a entry (0x40 = AAC)
	duration               float64 // seconds, 0 when the file does not say
	samples                int64   // stsz sample count of the sound track (non-fragmented)
	movieTimescale         uint64
}

// readMP4Box reads the box header at off within [off, limit).
func readMP4Box(data []byte, off, limit int) (mp4Box, error) {
	b := mp4Box{off: off}
	if limit-off < 8 {
		return b, fmt.Errorf("%w: MP4 file is truncated: %d stray bytes at byte %d where a box should start", ErrInvalidAudio, limit-off, off)
	}
	size := uint64(binary.BigEndian.Uint32(data[off:]))
	b.typ = string(data[off+4 : off+8])
	b.data = off + 8
	switch size {
	case 1:
		if limit-off < 16 {
			return b, fmt.Errorf("%w: MP4 file is truncated inside box %q at byte %d", ErrInvalidAudio, b.typ, off)
		}
		size = binary.BigEndian.Uint64(data[off+8:])
		b.data = off + 16
	case 0: // runs to the end of its parent (the file)
		size = uint64(limit - off)
	}
	if size < uint64(b.data-off) {
		return b, fmt.Errorf("%w: MP4 box %q at byte %d declares an impossible size %d", ErrInvalidAudio, b.typ, off, size)
	}
	if size > uint64(limit-off) {
		return b, fmt.Errorf("%w: MP4 file is truncated or damaged: box %q at byte %d claims %d bytes; %d remain",
			ErrInvalidAudio, b.typ, off, size, limit-off)
	}
	b.end = off + int(size)
	return b, nil
}

// mp4Children calls fn for each box inside [from, to).
func mp4Children(data []byte, from, to int, fn func(mp4Box) error) error {
	for off := from; off < to; {
		b, err := readMP4Box(data, off, to)
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
		off = b.end
	}
	return nil
}

// walkMP4 validates an MP4 file and describes its first sound track.
func walkMP4(data []byte) (*mp4Info, error) {
	info := &mp4Info{}
	err := mp4Children(data, 0, len(data), func(b mp4Box) error {
		switch b.typ {
		case "moov":
			if info.moov {
				return fmt.Errorf("%w: MP4 file has two movie boxes (moov)", ErrInvalidAudio)
			}
			info.moov = true
			return mp4Moov(data, b, info)
		case "mdat":
			info.mdat = true
		case "moof":
			info.fragmented = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !info.moov:
		return nil, fmt.Errorf("%w: MP4 file has no movie box (moov): it is truncated or still being written", ErrInvalidAudio)
	case !info.mdat:
		return nil, fmt.Errorf("%w: MP4 file has no media data (mdat)", ErrInvalidAudio)
	case !info.audio:
		return nil, fmt.Errorf("%w: MP4 file has no audio track", ErrInvalidAudio)
	case info.codec == "":
		return nil, fmt.Errorf("%w: MP4 audio track has no sample description (stsd)", ErrInvalidAudio)
	case info.samples == 0 && !info.fragmented:
		return nil, fmt.Errorf("%w: MP4 audio track has no samples", ErrInvalidAudio)
	}
	return info, nil
}

func mp4Moov(data []byte, moov mp4Box, info *mp4Info) error {
	return mp4Children(data, moov.data, moov.end, func(b mp4Box) error {
		switch b.typ {
		case "mvhd":
			ts, _, err := mp4TimescaleDuration(data, b)
			info.movieTimescale = ts
			return err
		case "mvex":
			info.fragmented = true
			return mp4Children(data, b.data, b.end, func(c mp4Box) error {
				if c.typ == "mehd" && info.duration == 0 && info.movieTimescale > 0 {
					p := data[c.data:c.end]
					var d uint64
					switch {
					case len(p) >= 12 && p[0] == 1:
						d = binary.BigEndian.Uint64(p[4:])
					case len(p) >= 8:
						d = uint64(binary.BigEndian.Uint32(p[4:]))
					default:
						return fmt.Errorf("%w: MP4 mehd box at byte %d is too short", ErrInvalidAudio, c.off)
					}
					info.duration = float64(d) / float64(info.movieTimescale)
				}
				return nil
			})
		case "trak":
			if info.audio {
				return nil
			}
			return mp4Trak(data, b, info)
		}
		return nil
	})
}

// mp4Trak reads a track; only a sound track ('soun' handler) fills info.
func mp4Trak(data []byte, trak mp4Box, info *mp4Info) error {
	var mdia *mp4Box
	if err := mp4Children(data, trak.data, trak.end, func(b mp4Box) error {
		if b.typ == "mdia" {
			mdia = &b
		}
		return nil
	}); err != nil || mdia == nil {
		return err
	}
	var (
		sound         bool
		ts, dur       uint64
		minf          *mp4Box
		haveTimescale bool
	)
	err := mp4Children(data, mdia.data, mdia.end, func(b mp4Box) error {
		switch b.typ {
		case "hdlr":
			p := data[b.data:b.end]
			if len(p) < 12 {
				return fmt.Errorf("%w: MP4 hdlr box at byte %d is too short", ErrInvalidAudio, b.off)
			}
			sound = string(p[8:12]) == "soun"
		case "mdhd":
			var err error
			ts, dur, err = mp4TimescaleDuration(data, b)
			haveTimescale = err == nil
			return err
		case "minf":
			minf = &b
		}
		return nil
	})
	if err != nil || !sound {
		return err
	}
	info.audio = true
	if !haveTimescale || ts == 0 {
		return fmt.Errorf("%w: MP4 audio track has no valid media header (mdhd)", ErrInvalidAudio)
	}
	if dur != 0 && dur != 1<<32-1 && dur != 1<<64-1 {
		info.duration = float64(dur) / float64(ts)
	}
	if minf == nil {
		return fmt.Errorf("%w: MP4 audio track has no media information (minf)", ErrInvalidAudio)
	}
	return mp4Children(data, minf.data, minf.end, func(b mp4Box) error {
		if b.typ != "stbl" {
			return nil
		}
		return mp4Children(data, b.data, b.end, func(c mp4Box) error {
			p := data[c.data:c.end]
			switch c.typ {
			case "stsd":
				if len(p) < 8 || binary.BigEndian.Uint32(p[4:]) == 0 {
					return fmt.Errorf("%w: MP4 sample description (stsd) at byte %d is empty", ErrInvalidAudio, c.off)
				}
				e, err := readMP4Box(data, c.data+8, c.end)
				if err != nil {
					return err
				}
				info.codec = e.typ
				if e.typ == "mp4a" {
					info.oti = mp4ObjectType(data, e)
				}
			case "stsz", "stz2":
				if len(p) < 12 {
					return fmt.Errorf("%w: MP4 sample size box (%s) at byte %d is too short", ErrInvalidAudio, c.typ, c.off)
				}
				info.samples = int64(binary.BigEndian.Uint32(p[8:]))
			}
			return nil
		})
	})
}

// mp4TimescaleDuration reads the timescale and duration of an mvhd or mdhd box.
func mp4TimescaleDuration(data []byte, b mp4Box) (ts, dur uint64, err error) {
	p := data[b.data:b.end]
	switch {
	case len(p) >= 32 && p[0] == 1:
		return uint64(binary.BigEndian.Uint32(p[20:])), binary.BigEndian.Uint64(p[24:]), nil
	case len(p) >= 20 && p[0] == 0:
		return uint64(binary.BigEndian.Uint32(p[12:])), uint64(binary.BigEndian.Uint32(p[16:])), nil
	}
	return 0, 0, fmt.Errorf("%w: MP4 %s box at byte %d is too short or of unknown version", ErrInvalidAudio, b.typ, b.off)
}

// mp4ObjectType finds the objectTypeIndication in an mp4a sample entry's esds box, or 0.
func mp4ObjectType(data []byte, entry mp4Box) byte {
	// AudioSampleEntry: 8 bytes of SampleEntry, 20 of audio fields, then child boxes
	// (QuickTime version 1 and 2 entries add 16 or 36 bytes).
	start := entry.data + 28
	if entry.data+10 <= entry.end {
		switch binary.BigEndian.Uint16(data[entry.data+8:]) {
		case 1:
			start += 16
		case 2:
			start += 36
		}
	}
	var oti byte
	_ = mp4Children(data, min(start, entry.end), entry.end, func(b mp4Box) error {
		if b.typ != "esds" {
			return nil
		}
		p := data[b.data:b.end]
		// version/flags, then ES_Descriptor (tag 3) holding DecoderConfigDescriptor (tag 4),
		// whose first byte is the objectTypeIndication (ISO/IEC 14496-1 7.2.6.5-6).
		i := 4
		desc := func(tag byte) bool { // reads a descriptor header; sizes take 1–4 bytes
			if i >= len(p) || p[i] != tag {
				return false
			}
			i++
			for n := 0; n < 4 && i < len(p); n++ {
				i++
				if p[i-1]&0x80 == 0 {
					break
				}
			}
			return i < len(p)
		}
		if !desc(3) || i+3 > len(p) {
			return nil
		}
		flags := p[i+2]
		i += 3
		if flags&0x80 != 0 { // streamDependenceFlag
			i += 2
		}
		if flags&0x40 != 0 && i < len(p) { // URL_Flag
			i += 1 + int(p[i])
		}
		if flags&0x20 != 0 { // OCRstreamFlag
			i += 2
		}
		if desc(4) {
			oti = p[i]
		}
		return nil
	})
	return oti
}

// mp4CodecName names an MP4 audio codec for messages.
func mp4CodecName(info *mp4Info) string {
	switch info.codec {
	case "mp4a":
		switch info.oti {
		case 0x40, 0x66, 0x67, 0x68:
			return "M4A/MP4 (AAC)"
		case 0x69, 0x6B:
			return "MP4 with MP3 audio"
		}
		return "M4A/MP4 (MPEG-4 audio)"
	case "alac":
		return "M4A (Apple Lossless)"
	case "Opus":
		return "MP4 with Opus audio"
	case "fLaC":
		return "MP4 with FLAC audio"
	}
	return fmt.Sprintf("MP4 with %q audio", info.codec)
}

// decodeMP4 validates an MP4 file and decodes its first audio track with ffmpeg.
func decodeMP4(ctx context.Context, data []byte, lim Limits) (*pcm, error) {
	info, err := walkMP4(data)
	if err != nil {
		return nil, err
	}
	return decodeFFmpeg(ctx, data, lim, "mov", mp4CodecName(info), info.duration)
}
