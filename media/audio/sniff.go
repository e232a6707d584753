package audio

import (
	"bytes"
	"fmt"
)

const acceptedFormats = "send WAV (PCM or IEEE float), MP3, FLAC, Ogg Vorbis, Ogg Opus, WebM (Opus) or, when the server has ffmpeg, M4A/MP4 (AAC)"

// Sniff detects the container by its magic bytes (never by file name) and returns "wav", "mp3",
// "flac", "ogg-vorbis", "ogg-opus" (Ogg by the codec header in its first packet), "webm"
// (WebM/Matroska) or "mp4" (ISO base media: MP4, M4A, MOV, 3GP). Empty input
// wraps ErrInvalidAudio; anything else unknown wraps ErrUnsupportedFormat with a message naming
// the format when it is recognised and the accepted formats.
func Sniff(data []byte) (string, error) {
	if len(data) == 0 {
		return "", fmt.Errorf("%w: empty audio file", ErrInvalidAudio)
	}
	switch {
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return FormatWAV, nil
	case len(data) < 12 && len(data) >= 4 && string(data[0:4]) == "RIFF":
		return "", fmt.Errorf("%w: file is %d bytes: too short for a WAV header", ErrInvalidAudio, len(data))
	case len(data) >= 4 && string(data[0:4]) == "RIFF":
		return "", fmt.Errorf("%w: RIFF file that is not WAVE (maybe AVI or WebP); %s", ErrUnsupportedFormat, acceptedFormats)
	case len(data) >= 4 && string(data[0:4]) == "RF64":
		return "", fmt.Errorf("%w: RF64 (64-bit WAV) is not supported; %s", ErrUnsupportedFormat, acceptedFormats)
	case len(data) >= 4 && string(data[0:4]) == "fLaC":
		return FormatFLAC, nil
	case len(data) >= 4 && string(data[0:4]) == "OggS":
		return sniffOgg(data)
	case len(data) >= 8 && string(data[4:8]) == "ftyp":
		return FormatMP4, nil
	case len(data) >= 4 && bytes.Equal(data[0:4], []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return FormatWebM, nil
	case len(data) >= 12 && string(data[0:4]) == "FORM" && (string(data[8:12]) == "AIFF" || string(data[8:12]) == "AIFC"):
		return "", fmt.Errorf("%w: AIFF is not supported; %s", ErrUnsupportedFormat, acceptedFormats)
	case len(data) >= 5 && string(data[0:5]) == "#!AMR":
		return "", fmt.Errorf("%w: AMR is not supported; %s", ErrUnsupportedFormat, acceptedFormats)
	}
	if off, tagged, err := skipID3v2(data); err == nil && tagged && bytes.HasPrefix(data[off:], []byte("fLaC")) {
		return FormatFLAC, nil // FLAC with a prepended ID3v2 tag
	}
	if _, err := locateMP3(data); err == nil {
		return FormatMP3, nil
	} else if !isNotMP3(err) {
		return "", err
	}
	if len(data) >= 2 && data[0] == 0xFF && data[1]&0xF6 == 0xF0 {
		return "", fmt.Errorf("%w: AAC (ADTS) is not supported; %s", ErrUnsupportedFormat, acceptedFormats)
	}
	return "", fmt.Errorf("%w: the data is not a recognised audio file; %s", ErrUnsupportedFormat, acceptedFormats)
}

// sniffOgg names the codec of an Ogg stream from its first packet.
func sniffOgg(data []byte) (string, error) {
	pkt, ok := oggFirstPacket(data)
	if !ok {
		return "", fmt.Errorf("%w: file is %d bytes: too short for an Ogg page header", ErrInvalidAudio, len(data))
	}
	has := func(p string) bool { return bytes.HasPrefix(pkt, []byte(p)) }
	var kind string
	switch {
	case has("\x01vorbis"):
		return FormatVorbis, nil
	case has("OpusHead"):
		return FormatOpus, nil
	case has("\x7fFLAC"):
		kind = "FLAC in Ogg"
	case has("Speex   "):
		kind = "Ogg Speex"
	case has("\x80theora"):
		kind = "Ogg Theora video"
	case len(pkt) < 8:
		return "", fmt.Errorf("%w: Ogg file whose first packet is cut off or empty", ErrInvalidAudio)
	default:
		kind = "Ogg with an unknown codec"
	}
	return "", fmt.Errorf("%w: %s is not supported; %s", ErrUnsupportedFormat, kind, acceptedFormats)
}
