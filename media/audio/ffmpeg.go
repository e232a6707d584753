package audio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Formats no pure-Go decoder here handles (AAC in MP4/M4A, and WebM whose audio is not Opus)
// are decoded by the ffmpeg program as a subprocess, when it is installed, as the Python server
// and openai-whisper's load_audio do. Our own demuxer has validated the container first (so a
// damaged file is a 400 naming the problem, and the duration limit is checked from the header
// when it states one). ffmpeg then reads the input from a private temporary file (MP4 files
// written by ffmpeg and Safari keep their index after the data, so a pipe is not enough), with
// an empty environment, only the file protocol, its demuxer forced to the validated container,
// stdin closed, output limited to the duration limit (+1 s) and a byte cap, and writes 32-bit
// float WAV with the source's rate and channels to a pipe; that WAV goes through our own parser and the same downmix and resampler as every
// other format. Without ffmpeg these formats are a 415 that says ffmpeg is what is missing.

// ffmpegOutputCap bounds the decoded bytes read from ffmpeg when no duration limit applies
// (2 GiB: about 1.5 hours of 48 kHz stereo float).
const ffmpegOutputCap = 2 << 30

var ffmpegLook = sync.OnceValues(func() (string, error) { return exec.LookPath("ffmpeg") })

// FFmpegPath returns the ffmpeg program used for AAC (MP4/M4A) and non-Opus WebM audio, or ""
// when none is on PATH (those formats then get ErrUnsupportedFormat).
func FFmpegPath() string {
	p, err := ffmpegLook()
	if err != nil {
		return ""
	}
	return p
}

// ffmpegBinary is a seam for tests (a missing ffmpeg, a failing one).
var ffmpegBinary = FFmpegPath

// decodeFFmpeg decodes the first audio stream of data with ffmpeg, whose demuxer is forced to
// demuxer ("mov" or "matroska": the container our own walker validated, so ffmpeg cannot be made
// to read the bytes as a playlist or any other format). what names the format for messages
// ("M4A/MP4 (AAC)"); estDuration, when > 0, is the duration the container states.
func decodeFFmpeg(ctx context.Context, data []byte, lim Limits, demuxer, what string, estDuration float64) (*pcm, error) {
	bin := ffmpegBinary()
	if bin == "" {
		return nil, fmt.Errorf("%w: %s needs the ffmpeg program to decode, and it is not installed on this server (Debian: apt-get install ffmpeg); %s",
			ErrUnsupportedFormat, what, acceptedFormats)
	}
	if lim.MaxDuration > 0 && estDuration > lim.MaxDuration {
		return nil, fmt.Errorf("%w: audio lasts %.3f s; the limit is %g s", ErrTooLong, estDuration, lim.MaxDuration)
	}
	f, err := os.CreateTemp("", "tt-audio-*")
	if err != nil {
		return nil, fmt.Errorf("audio: temporary file for ffmpeg: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("audio: temporary file for ffmpeg: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("audio: temporary file for ffmpeg: %w", err)
	}
	args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file",
		"-f", demuxer, "-i", "file:" + f.Name(), "-map", "0:a:0", "-vn", "-sn", "-dn", "-c:a", "pcm_f32le", "-f", "wav"}
	limit := int64(ffmpegOutputCap)
	if lim.MaxDuration > 0 {
		args = append(args, "-t", strconv.FormatFloat(lim.MaxDuration+1, 'f', 3, 64))
		// 8 channels of 96 kHz float for the allowed time, plus headers.
		limit = min(limit, int64((lim.MaxDuration+1)*96000*8*4)+1<<16)
	}
	args = append(args, "pipe:1")
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("audio: ffmpeg: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s needs ffmpeg, which could not be started: %v", ErrUnsupportedFormat, what, err)
	}
	wav, readErr := io.ReadAll(&meteredReader{r: io.LimitReader(out, limit+1), m: lim.meter})
	if isReserveError(readErr) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, readErr
	}
	if int64(len(wav)) > limit {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%w: %s decodes to more than %d bytes", ErrTooLong, what, limit)
	}
	waitErr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if readErr != nil || waitErr != nil {
		msg := lastLine(stderr.String())
		if msg == "" {
			msg = fmt.Sprint(errors.Join(readErr, waitErr))
		}
		return nil, fmt.Errorf("%w: %s could not be decoded (ffmpeg: %s)", ErrInvalidAudio, what, msg)
	}
	p, err := decodeWAV(ctx, wav, lim)
	if err != nil {
		if errors.Is(err, ErrTooLong) || isReserveError(err) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: ffmpeg's output: %v", ErrInvalidAudio, what, err)
	}
	return p, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
