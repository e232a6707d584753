package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

const audioFeaturesUsage = `usage: tt-media-server audio-features [--n-mels 80|128] [--mel-filters mel_filters.npz] IN OUT

Decodes IN (any audio file the server accepts: WAV, MP3, FLAC), downmixes it, resamples it to
16 kHz and writes Whisper's log-mel features of its first 30 s to OUT as little-endian float32,
n_mels rows × 3000 frames, row-major (no header). "-" means stdin / stdout. The filter bank is
computed (librosa's Slaney bank, equal to whisper's mel_filters.npz); --mel-filters reads it
from a whisper mel_filters.npz instead.
`

// audioFeatures runs the audio-features subcommand (args exclude the subcommand name).
func audioFeatures(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("audio-features", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, audioFeaturesUsage) }
	nMels := fs.Int("n-mels", 80, "mel bins: 80 (Whisper tiny … large-v2) or 128 (large-v3, turbo)")
	filtersPath := fs.String("mel-filters", "", "read the filter bank from this whisper mel_filters.npz")
	in, out, help, err := parseInOut(fs, args)
	if help || err != nil {
		return err
	}
	if *nMels != 80 && *nMels != 128 {
		return fmt.Errorf("audio-features: --n-mels must be 80 or 128, not %d", *nMels)
	}
	var lm *audio.LogMel
	if *filtersPath != "" {
		var f *audio.MelFilters
		if f, err = audio.LoadMelFilters(*filtersPath, *nMels); err == nil {
			lm, err = audio.NewLogMel(f)
		}
	} else {
		lm, err = audio.WhisperLogMel(*nMels)
	}
	if err != nil {
		return fmt.Errorf("audio-features: %w", err)
	}

	data, err := readInput(in, stdin)
	if err != nil {
		return fmt.Errorf("audio-features: read input: %w", err)
	}
	dec, err := audio.Decode(ctx, data, audio.WhisperSampleRate, audio.Limits{})
	if err != nil {
		return fmt.Errorf("audio-features: %s: %w", in, err)
	}
	mel, err := lm.Compute(ctx, dec.Samples, nil)
	if err != nil {
		return fmt.Errorf("audio-features: %w", err)
	}
	buf := make([]byte, 0, 4*len(mel))
	for _, v := range mel {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	if err := writeOutput(out, buf, stdout); err != nil {
		return fmt.Errorf("audio-features: write output: %w", err)
	}
	note := ""
	if dec.Duration > audio.WhisperChunkSec {
		note = fmt.Sprintf(" (only the first %d s are used)", audio.WhisperChunkSec)
	}
	fmt.Fprintf(stderr, "audio-features: %s: %s, %d Hz, %d ch, %.3f s%s → %d×%d float32 LE → %s\n",
		in, dec.Format, dec.SourceRate, dec.SourceChannels, dec.Duration, note, lm.NMels(), audio.WhisperNFrames, out)
	return nil
}
