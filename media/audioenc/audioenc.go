// Package audioenc encodes synthesized speech (mono float32 samples) into the formats clients
// ask for, as a stream: each Write encodes the samples it is given and passes the bytes on to
// the writer as soon as the encoder produces them, so a response can start before the whole
// audio exists. WAV (go-audio/wav for a whole file; a header with open-ended sizes when
// streamed), raw PCM and FLAC (mewkiz/flac) are pure Go; MP3 (libmp3lame), Opus in Ogg at
// 48 kHz (libopus), AAC in ADTS and Ogg Vorbis (libvorbis) run Debian's ffmpeg as a locked-down
// subprocess (ffmpeg.go). There is no fallback: a format whose encoder is missing is refused
// with ErrUnavailable naming what is missing, and Available lists what this server can encode.
package audioenc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

// Formats.
const (
	WAV    = "wav"
	PCM    = "pcm" // raw signed 16-bit little-endian, mono
	FLAC   = "flac"
	MP3    = "mp3"
	Opus   = "opus" // Opus in Ogg, 48 kHz
	AAC    = "aac"  // AAC-LC in ADTS
	Vorbis = "ogg"  // Vorbis in Ogg (HEAD's "ogg")
)

// All lists every format this package knows, pure-Go ones first.
var All = []string{WAV, PCM, FLAC, MP3, Opus, AAC, Vorbis}

// Errors.
var (
	// ErrUnknownFormat is a format name this package does not know.
	ErrUnknownFormat = errors.New("unknown audio format")
	// ErrUnavailable is a known format whose encoder is missing on this server.
	ErrUnavailable = errors.New("audio encoder unavailable")
)

// ContentType is the MIME type of a format.
func ContentType(format string) string {
	switch format {
	case WAV:
		return "audio/wav"
	case PCM:
		return "audio/pcm"
	case FLAC:
		return "audio/flac"
	case MP3:
		return "audio/mpeg"
	case Opus:
		return "audio/ogg; codecs=opus"
	case AAC:
		return "audio/aac"
	case Vorbis:
		return "audio/ogg"
	}
	return "application/octet-stream"
}

// Stream encodes audio as it comes.
type Stream interface {
	// Write encodes samples (mono, in [-1, 1], at the rate the stream was opened with).
	Write(samples []float32) error
	// Close finishes the stream (trailers, the encoder's last frames) and waits for the bytes
	// to be written. It must be called once, also after a failed Write.
	Close() error
}

// Options of a stream.
type Options struct {
	// Rate is the input's sample rate.
	Rate int
	// OutRate, when not 0, resamples to this rate (PCM for OpenAI's 24 kHz); formats with a rate
	// of their own (Opus: 48 kHz) ignore it.
	OutRate int
	// Length, when > 0, is the total number of input samples, known in advance: WAV then gets
	// exact sizes in its header (through go-audio/wav) instead of open-ended ones.
	Length int
}

// Available lists the formats this server can encode now (the ffmpeg ones only when ffmpeg
// with their encoder is installed).
func Available() []string {
	var out []string
	for _, f := range All {
		if Check(f) == nil {
			out = append(out, f)
		}
	}
	return out
}

// Check says whether format can be encoded here: nil, or ErrUnknownFormat, or ErrUnavailable
// naming the program or library that is missing.
func Check(format string) error {
	switch format {
	case WAV, PCM, FLAC:
		return nil
	case MP3, Opus, AAC, Vorbis:
		return ffmpegCheck(format)
	}
	return fmt.Errorf("%w %q (known: %v)", ErrUnknownFormat, format, All)
}

// New opens a stream of format writing to w. ctx bounds an encoder subprocess: cancelling it
// stops the encoder.
func New(ctx context.Context, format string, w io.Writer, o Options) (Stream, error) {
	if o.Rate <= 0 {
		return nil, fmt.Errorf("audioenc: sample rate %d", o.Rate)
	}
	if err := Check(format); err != nil {
		return nil, err
	}
	switch format {
	case WAV:
		return newWAV(w, o)
	case PCM:
		return &pcmStream{w: w, rs: newResampler(o.Rate, o.OutRate)}, nil
	case FLAC:
		return newFLAC(w, o)
	}
	return newFFmpeg(ctx, format, w, o)
}

// Encode encodes a whole audio into format.
func Encode(ctx context.Context, format string, w io.Writer, samples []float32, o Options) error {
	o.Length = len(samples)
	s, err := New(ctx, format, w, o)
	if err != nil {
		return err
	}
	werr := s.Write(samples)
	return errors.Join(werr, s.Close())
}

// OutputRate is the sample rate a format's output has for input at rate with o.
func OutputRate(format string, o Options) int {
	switch {
	case format == Opus:
		return 48000
	case o.OutRate > 0:
		return o.OutRate
	}
	return o.Rate
}

// resampler converts chunk by chunk (each chunk on its own; speech chunks end in silence, so
// the seams do not click).
type resampler struct{ from, to int }

func newResampler(from, to int) *resampler {
	if to == 0 || to == from {
		return nil
	}
	return &resampler{from: from, to: to}
}

func (r *resampler) apply(x []float32) []float32 {
	if r == nil {
		return x
	}
	return audio.Resample(x, r.from, r.to)
}

// int16s converts samples to 16-bit PCM, clipping.
func int16s(x []float32) []int16 {
	out := make([]int16, len(x))
	for i, v := range x {
		out[i] = toInt16(v)
	}
	return out
}

func toInt16(v float32) int16 {
	switch {
	case v != v: // NaN
		return 0
	case v >= 1:
		return 32767
	case v <= -1:
		return -32768
	}
	return int16(v * 32767)
}

// ffmpegFormats are the formats encoded by ffmpeg.
var ffmpegFormats = []string{MP3, Opus, AAC, Vorbis}

// NeedsFFmpeg reports whether format is encoded by the ffmpeg subprocess.
func NeedsFFmpeg(format string) bool { return slices.Contains(ffmpegFormats, format) }
