// Package audio is the audio front-end: it turns untrusted uploaded audio bytes (WAV, MP3, FLAC,
// Ogg Vorbis, Ogg Opus, WebM and, through ffmpeg, MP4/M4A) into mono float32 samples at the rate a model wants, within size and
// duration limits, and finds the speech in them with a silence-based segmenter.
//
// Every failure caused by the input wraps one of the sentinel errors below, with a message that
// says what is wrong, so callers can map it to a client error.
package audio

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Errors returned by Decode and Sniff wrap exactly one of them when the input is
// at fault (errors.Is works); a cancelled context is returned as ctx.Err().
var (
	// ErrUnsupportedFormat: the bytes are not a container/encoding this package decodes.
	ErrUnsupportedFormat = errors.New("unsupported audio format")
	// ErrInvalidAudio: the container is recognised but the data is empty, corrupt or inconsistent.
	ErrInvalidAudio = errors.New("invalid audio")
	// ErrTooLarge: the encoded input is bigger than Limits.MaxBytes.
	ErrTooLarge = errors.New("audio file too large")
	// ErrTooLong: the audio lasts longer than Limits.MaxDuration.
	ErrTooLong = errors.New("audio too long")
)

// Format names returned by Sniff and stored in Decoded.Format.
const (
	FormatWAV    = "wav"
	FormatMP3    = "mp3"
	FormatFLAC   = "flac"
	FormatVorbis = "ogg-vorbis"
	FormatOpus   = "ogg-opus"
	FormatWebM   = "webm" // WebM/Matroska: Opus here, other codecs through ffmpeg
	FormatMP4    = "mp4"  // MP4/M4A/MOV (AAC...), decoded through ffmpeg
)

// Sample-rate bounds accepted from a source header and as a target rate.
const (
	MinSampleRate = 1000
	MaxSampleRate = 768000
)

// Limits for one decode. Zero means no limit.
type Limits struct {
	MaxBytes    int64   // encoded input size cap (MAX_AUDIO_SIZE_BYTES) → ErrTooLarge
	MaxDuration float64 // seconds (MAX_AUDIO_DURATION_SECONDS) → ErrTooLong (reject, do not truncate)
	// Reserve, when set, is asked for the decode's memory (DecodeCost) before samples are
	// decoded: with the estimate from the frame count the container states, and for more as a
	// decode passes what it reserved (a container that states no length). An error stops the
	// decode and comes back wrapped in *ReserveError (AUDIO_MEMORY_BUDGET_BYTES: the server's
	// budget waits for room, or refuses).
	Reserve func(n int64) error

	meter *meter // Decode's, from Reserve
}

// Decoded is audio ready for a model.
type Decoded struct {
	Samples        []float32 // mono, at SampleRate
	SampleRate     int       // the target rate asked for
	Duration       float64   // exact seconds of the source (frames / source rate)
	Format         string    // "wav", "mp3", "flac", "ogg-vorbis", "ogg-opus", "webm" or "mp4"
	SourceRate     int
	SourceChannels int
}

// pcm is what a container decoder hands back: mono samples at the source rate.
type pcm struct {
	mono     []float32
	rate     int
	channels int
	// srcRate and srcFrames, when set, are the stream's own rate and length, for a decoder that
	// outputs a lower rate than the stream's (MP3 at half rate).
	srcRate   int
	srcFrames int64
}

// Decode sniffs the container, decodes it, downmixes by averaging channels and resamples to
// targetRate (0 keeps the source rate). The duration limit is checked from the header or the
// frame count before samples are decoded; allocations are bounded by the real input size (and
// the duration limit), never by sizes a header claims.
func Decode(ctx context.Context, data []byte, targetRate int, lim Limits) (*Decoded, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if targetRate != 0 && (targetRate < MinSampleRate || targetRate > MaxSampleRate) {
		return nil, fmt.Errorf("audio: target sample rate %d Hz is outside %d..%d", targetRate, MinSampleRate, MaxSampleRate)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty audio file", ErrInvalidAudio)
	}
	if lim.MaxBytes > 0 && int64(len(data)) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: audio file is %d bytes; the limit is %d bytes", ErrTooLarge, len(data), lim.MaxBytes)
	}
	format, err := Sniff(data)
	if err != nil {
		return nil, err
	}
	if lim.Reserve != nil {
		lim.meter = &meter{reserve: lim.Reserve, target: targetRate}
	}
	var p *pcm
	switch format {
	case FormatWAV:
		p, err = decodeWAV(ctx, data, lim)
	case FormatMP3:
		p, err = decodeMP3(ctx, data, lim, targetRate)
	case FormatFLAC:
		p, err = decodeFLAC(ctx, data, lim)
	case FormatVorbis:
		p, err = decodeVorbis(ctx, data, lim)
	case FormatOpus:
		p, err = decodeOpus(ctx, data, lim)
	case FormatWebM:
		p, err = decodeWebM(ctx, data, lim)
	case FormatMP4:
		p, err = decodeMP4(ctx, data, lim)
	default:
		err = fmt.Errorf("%w: %s", ErrUnsupportedFormat, format)
	}
	if err != nil {
		return nil, err
	}
	if len(p.mono) == 0 {
		return nil, fmt.Errorf("%w: %s contains no audio samples", ErrInvalidAudio, format)
	}
	// Belt and braces: decoders check the limit before decoding; this covers any estimate.
	if err := checkDuration(int64(len(p.mono)), p.rate, lim); err != nil {
		return nil, err
	}
	if targetRate == 0 {
		targetRate = p.rate
	}
	out, err := resampleCtx(ctx, p.mono, p.rate, targetRate)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 { // found by FuzzDecode: 1 frame at 143 kHz is no sample at 16 kHz
		return nil, fmt.Errorf("%w: the audio is too short: %d frames at %d Hz give no sample at %d Hz",
			ErrInvalidAudio, len(p.mono), p.rate, targetRate)
	}
	srcRate, srcFrames := p.rate, int64(len(p.mono))
	if p.srcRate > 0 {
		srcRate, srcFrames = p.srcRate, p.srcFrames
	}
	return &Decoded{
		Samples:        out,
		SampleRate:     targetRate,
		Duration:       float64(srcFrames) / float64(srcRate),
		Format:         format,
		SourceRate:     srcRate,
		SourceChannels: p.channels,
	}, nil
}

// checkDuration returns ErrTooLong when frames at rate last longer than lim.MaxDuration, and
// otherwise reserves their memory (Limits.Reserve): decoders call it with the frame count their
// container states before decoding.
func checkDuration(frames int64, rate int, lim Limits) error {
	if lim.MaxDuration > 0 && rate > 0 {
		d := float64(frames) / float64(rate)
		if d > lim.MaxDuration {
			return fmt.Errorf("%w: audio lasts %.3f s; the limit is %g s", ErrTooLong, d, lim.MaxDuration)
		}
	}
	return lim.meter.need(frames, rate)
}

// sanitize maps NaN and ±Inf (possible in float WAV) to 0 so they cannot poison a model.
func sanitize(v float32) float32 {
	if v != v || math.IsInf(float64(v), 0) {
		return 0
	}
	return v
}
