package audio

import (
	"bytes"
	"fmt"
)

const acceptedFormats = "send WAV (PCM or IEEE float), MP3 or FLAC"

// Sniff detects the container by its magic bytes (never by file name) and returns "wav", "mp3"
// or "flac". Empty input wraps ErrInvalidAudio; anything else unknown wraps ErrUnsupportedFormat
// with a message naming the format when it is recognised and the accepted formats.
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
		kind := "Ogg"
		if bytes.Contains(data[:min(len(data), 128)], []byte("OpusHead")) {
			kind = "Ogg Opus"
		} else if bytes.Contains(data[:min(len(data), 128)], []byte("\x01vorbis")) {
			kind = "Ogg Vorbis"
		}
		return "", fmt.Errorf("%w: %s is not supported; %s", ErrUnsupportedFormat, kind, acceptedFormats)
	case len(data) >= 12 && string(data[4:8]) == "ftyp":
		return "", fmt.Errorf("%w: MP4/M4A (AAC) is not supported; %s", ErrUnsupportedFormat, acceptedFormats)
	case len(data) >= 4 && bytes.Equal(data[0:4], []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return "", fmt.Errorf("%w: WebM/Matroska is not supported; %s", ErrUnsupportedFormat, acceptedFormats)
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
