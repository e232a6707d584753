package audioenc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

// The ffmpeg encoders run as in media/audio's decoder: the ffmpeg program found on PATH
// (audio.FFmpegPath), started with an empty environment, only the pipe protocol, the input
// forced to raw float32 mono at a stated rate on stdin, no metadata, bit-exact muxing, packets
// flushed as soon as they are encoded, and stderr kept to its first 4 KiB. The process lives
// as long as the stream: Close ends its input and waits for it, a cancelled context kills it.

// ffmpegCodec is a format's encoder, its ffmpeg muxer and bit rate.
var ffmpegCodec = map[string]struct{ codec, muxer, bitrate, lib string }{
	MP3:    {"libmp3lame", "mp3", "64k", "libmp3lame"},
	Opus:   {"libopus", "ogg", "32k", "libopus"},
	AAC:    {"aac", "adts", "64k", "ffmpeg's native AAC encoder"},
	Vorbis: {"libvorbis", "ogg", "64k", "libvorbis"},
}

// ffmpegBinary is a seam for tests (no ffmpeg).
var ffmpegBinary = audio.FFmpegPath

// encoders lists the encoders of an ffmpeg binary (ffmpeg -encoders), once per binary.
var encoders = struct {
	sync.Mutex
	by map[string]map[string]bool
}{by: map[string]map[string]bool{}}

func encoderList(bin string) map[string]bool {
	encoders.Lock()
	defer encoders.Unlock()
	if m, ok := encoders.by[bin]; ok {
		return m
	}
	m := map[string]bool{}
	cmd := exec.Command(bin, "-hide_banner", "-encoders")
	cmd.Env = []string{}
	if out, err := cmd.Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && len(f[0]) == 6 && f[0][0] == 'A' {
				m[f[1]] = true
			}
		}
	}
	encoders.by[bin] = m
	return m
}

func ffmpegCheck(format string) error {
	c := ffmpegCodec[format]
	bin := ffmpegBinary()
	if bin == "" {
		return fmt.Errorf("%w: %s needs the ffmpeg program (with %s), which is not installed on this server (Debian: apt-get install ffmpeg)",
			ErrUnavailable, format, c.lib)
	}
	if !encoderList(bin)[c.codec] {
		return fmt.Errorf("%w: %s needs ffmpeg's %s encoder, which %s does not have", ErrUnavailable, format, c.codec, bin)
	}
	return nil
}

type ffmpegStream struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	rs     *resampler
	copied chan error
	stderr *bytes.Buffer
	closed bool
}

func newFFmpeg(ctx context.Context, format string, w io.Writer, o Options) (Stream, error) {
	c := ffmpegCodec[format]
	rate := o.Rate
	rs := newResampler(o.Rate, o.OutRate)
	if format == Opus && rate != 48000 {
		rs, rate = newResampler(o.Rate, 48000), 48000
	} else if rs != nil {
		rate = o.OutRate
	}
	args := []string{"-hide_banner", "-loglevel", "error", "-protocol_whitelist", "pipe",
		"-f", "f32le", "-ar", strconv.Itoa(rate), "-ac", "1", "-i", "pipe:0",
		"-vn", "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact",
		"-c:a", c.codec, "-b:a", c.bitrate, "-flush_packets", "1", "-f", c.muxer, "pipe:1"}
	cmd := exec.CommandContext(ctx, ffmpegBinary(), args...)
	cmd.Env = []string{}
	stderr := &bytes.Buffer{}
	cmd.Stderr = &limitedWriter{w: stderr, n: 4096}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s encoder: %w", format, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s encoder: %w", format, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s: ffmpeg could not be started: %v", ErrUnavailable, format, err)
	}
	s := &ffmpegStream{cmd: cmd, in: in, rs: rs, copied: make(chan error, 1), stderr: stderr}
	go func() {
		buf := make([]byte, 16<<10)
		var werr error
		for {
			n, rerr := out.Read(buf)
			if n > 0 && werr == nil {
				_, werr = w.Write(buf[:n])
			}
			if rerr != nil {
				break
			}
		}
		s.copied <- werr
	}()
	return s, nil
}

func (s *ffmpegStream) Write(x []float32) error {
	x = s.rs.apply(x)
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	if _, err := s.in.Write(b); err != nil {
		return fmt.Errorf("encoder input: %w", err)
	}
	return nil
}

func (s *ffmpegStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	cerr := s.in.Close()
	werr := <-s.copied
	err := s.cmd.Wait()
	if err != nil {
		msg := strings.TrimSpace(s.stderr.String())
		return fmt.Errorf("encoder (ffmpeg %s) failed: %w %s", s.cmd.Args[len(s.cmd.Args)-3], err, msg)
	}
	return errors.Join(cerr, werr)
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
