package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

const audioDecodeUsage = `usage: tt-media-server audio-decode [--rate 16000] IN OUT.wav

Decodes IN exactly as the transcription routes do (any accepted format: WAV, MP3, FLAC, Ogg
Vorbis/Opus, WebM, and M4A/MP4 when ffmpeg is installed), downmixes it, resamples it to --rate
(default 16000, what Whisper hears) and writes it to OUT as a 16-bit PCM mono WAV, the same
samples openai-whisper's load_audio gets from "ffmpeg -ac 1 -ar 16000 -f s16le". "-" means
stdin / stdout. The WAV is written by go-audio/wav's encoder.
`

// audioDecode runs the audio-decode subcommand (args exclude the subcommand name).
func audioDecode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("audio-decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, audioDecodeUsage) }
	rate := fs.Int("rate", audio.WhisperSampleRate, "output sample rate in Hz")
	in, out, help, err := parseInOut(fs, args)
	if help || err != nil {
		return err
	}
	if *rate < audio.MinSampleRate || *rate > audio.MaxSampleRate {
		return fmt.Errorf("audio-decode: --rate %d is outside %d..%d", *rate, audio.MinSampleRate, audio.MaxSampleRate)
	}
	data, err := readInput(in, stdin)
	if err != nil {
		return fmt.Errorf("audio-decode: read input: %w", err)
	}
	dec, err := audio.Decode(ctx, data, *rate, audio.Limits{})
	if err != nil {
		return fmt.Errorf("audio-decode: %s: %w", in, err)
	}
	var ws writeSeeker
	if err := writeWAV16(&ws, dec.Samples, *rate); err != nil {
		return fmt.Errorf("audio-decode: encode WAV: %w", err)
	}
	if err := writeOutput(out, ws.buf, stdout); err != nil {
		return fmt.Errorf("audio-decode: write output: %w", err)
	}
	fmt.Fprintf(stderr, "audio-decode: %s: %s, %d Hz, %d ch, %.3f s → %d Hz mono 16-bit WAV, %d samples → %s\n",
		in, dec.Format, dec.SourceRate, dec.SourceChannels, dec.Duration, *rate, len(dec.Samples), out)
	return nil
}

// parseInOut parses a subcommand's flags and its two arguments, IN and OUT; help is true when
// the usage was asked for (and printed).
func parseInOut(fs *flag.FlagSet, args []string) (in, out string, help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", "", true, nil
		}
		return "", "", false, fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return "", "", false, fmt.Errorf("%s: want IN and OUT, got %d arguments", fs.Name(), fs.NArg())
	}
	return fs.Arg(0), fs.Arg(1), false, nil
}

// readInput reads the file in, or stdin for "-".
func readInput(in string, stdin io.Reader) ([]byte, error) {
	if in == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(in)
}

// writeOutput writes b to the file out, or to stdout for "-".
func writeOutput(out string, b []byte, stdout io.Writer) error {
	if out == "-" {
		_, err := stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// writeWAV16 writes mono float samples in [-1, 1] as a 16-bit PCM WAV with go-audio/wav,
// converted as ffmpeg converts float to s16 (round(x·32768), clipped).
func writeWAV16(w io.WriteSeeker, samples []float32, rate int) error {
	buf := &goaudio.IntBuffer{
		Format:         &goaudio.Format{NumChannels: 1, SampleRate: rate},
		Data:           make([]int, len(samples)),
		SourceBitDepth: 16,
	}
	for i, v := range samples {
		buf.Data[i] = int(max(-32768, min(32767, math.RoundToEven(float64(v)*32768))))
	}
	enc := wav.NewEncoder(w, rate, 16, 1, 1)
	if err := enc.Write(buf); err != nil {
		return err
	}
	return enc.Close()
}

// writeSeeker is an in-memory io.WriteSeeker (the WAV encoder seeks back to patch its sizes).
type writeSeeker struct {
	buf []byte
	pos int
}

func (w *writeSeeker) Write(p []byte) (int, error) {
	if end := w.pos + len(p); end > len(w.buf) {
		w.buf = append(w.buf, make([]byte, end-len(w.buf))...)
	}
	copy(w.buf[w.pos:], p)
	w.pos += len(p)
	return len(p), nil
}

func (w *writeSeeker) Seek(offset int64, whence int) (int64, error) {
	var p int64
	switch whence {
	case io.SeekStart:
		p = offset
	case io.SeekCurrent:
		p = int64(w.pos) + offset
	case io.SeekEnd:
		p = int64(len(w.buf)) + offset
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if p < 0 {
		return 0, fmt.Errorf("seek: negative position %d", p)
	}
	w.pos = int(p)
	return p, nil
}
