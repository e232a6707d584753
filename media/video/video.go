// Package video turns generated frames into the files a video job serves: an H.264 MP4 encoded
// by Debian's ffmpeg as a locked-down subprocess (raw RGB on stdin, libx264 with the Python
// server's settings: CRF 23, yuv420p, High@4.2, +faststart), a WebP thumbnail and a WebP
// spritesheet of evenly spaced frames.
package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Frames is a clip: Frames[i] is one RGB24 frame of Width×Height (3 bytes a pixel, rows top
// to bottom), shown at FPS frames a second.
type Frames struct {
	Width, Height, FPS int
	Frames             [][]byte
}

// Validate checks the clip's shape: what the encoder's raw input needs.
func (f Frames) Validate() error {
	switch {
	case f.Width <= 0 || f.Height <= 0 || f.Width%2 != 0 || f.Height%2 != 0:
		return fmt.Errorf("video: frame size %dx%d must be positive and even (yuv420p)", f.Width, f.Height)
	case f.FPS <= 0:
		return fmt.Errorf("video: fps %d must be positive", f.FPS)
	case len(f.Frames) == 0:
		return errors.New("video: no frames")
	}
	for i, fr := range f.Frames {
		if len(fr) != f.Width*f.Height*3 {
			return fmt.Errorf("video: frame %d has %d bytes, want %d (%dx%d RGB)", i, len(fr), f.Width*f.Height*3, f.Width, f.Height)
		}
	}
	return nil
}

// Frame returns frame i as an image.
func (f Frames) Frame(i int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, f.Width, f.Height))
	src := f.Frames[i]
	for p, q := 0, 0; p < len(src); p, q = p+3, q+4 {
		img.Pix[q], img.Pix[q+1], img.Pix[q+2], img.Pix[q+3] = src[p], src[p+1], src[p+2], 255
	}
	return img
}

// Options are the encoder's settings: HEAD's TT_VIDEO_EXPORT_CRF (0-51; 0 is lossless yuv444p
// as in HEAD) and TT_VIDEO_EXPORT_PRESET (x264's preset), and the time an encode may take.
type Options struct {
	CRF     int
	Preset  string
	Timeout time.Duration
}

// DefaultOptions: HEAD's CRF 23 and 600 s, and preset veryfast, not HEAD's ultrafast, which
// turns off CABAC and 8x8 transforms, so the stream comes out Constrained Baseline whatever
// -profile:v says; veryfast is the fastest preset whose stream really is High@4.2.
var DefaultOptions = Options{CRF: 23, Preset: "veryfast", Timeout: 600 * time.Second}

// Presets are x264's preset names.
var Presets = []string{"ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"}

// ErrNoFFmpeg says ffmpeg (with libx264) is not installed.
var ErrNoFFmpeg = errors.New("video: ffmpeg with libx264 is not installed (Debian: apt-get install ffmpeg)")

var ffmpegLook = sync.OnceValues(func() (string, error) { return exec.LookPath("ffmpeg") })

// FFmpegPath is the ffmpeg program the encoder runs (a seam for tests of a missing one).
var FFmpegPath = func() (string, error) {
	p, err := ffmpegLook()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoFFmpeg, err)
	}
	return p, nil
}

// Check says whether the encoder can run: ffmpeg is installed and has libx264. The video
// service refuses to start without it.
func Check(ctx context.Context) error {
	bin, err := FFmpegPath()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-hide_banner", "-nostdin", "-encoders")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w: %s -encoders: %w", ErrNoFFmpeg, bin, err)
	}
	if !bytes.Contains(out, []byte("libx264")) {
		return fmt.Errorf("%w: %s has no libx264 encoder", ErrNoFFmpeg, bin)
	}
	return nil
}

// EncodeMP4 encodes the clip into an MP4 at path (created or truncated; the caller owns the
// path and removes it on error). ffmpeg runs with an empty environment, reads only the raw
// frames on stdin, may write only path, and is killed after o.Timeout or when ctx ends.
func EncodeMP4(ctx context.Context, path string, f Frames, o Options) error {
	if err := f.Validate(); err != nil {
		return err
	}
	bin, err := FFmpegPath()
	if err != nil {
		return err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y",
		"-protocol_whitelist", "pipe,file",
		"-f", "rawvideo", "-vcodec", "rawvideo", "-s", fmt.Sprintf("%dx%d", f.Width, f.Height),
		"-pix_fmt", "rgb24", "-r", strconv.Itoa(f.FPS), "-i", "pipe:0", "-an", "-c:v", "libx264"}
	if o.CRF == 0 {
		args = append(args, "-crf", "0", "-pix_fmt", "yuv444p")
	} else {
		args = append(args, "-crf", strconv.Itoa(o.CRF), "-pix_fmt", "yuv420p", "-tune", "film",
			"-profile:v", "high", "-level", "4.2")
	}
	if o.Preset != "" {
		args = append(args, "-preset", o.Preset)
	}
	args = append(args, "-movflags", "+faststart", "-f", "mp4", "file:"+path)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{}
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &capped{buf: &stderr, n: 4096}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("video: ffmpeg: %w", err)
	}
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("video: encoding took longer than %s: %w", o.Timeout, ctx.Err())
		}
		return fmt.Errorf("%w: %w", ErrNoFFmpeg, err)
	}
	var writeErr error
	for _, fr := range f.Frames {
		if _, writeErr = stdin.Write(fr); writeErr != nil {
			break
		}
	}
	closeErr := stdin.Close()
	waitErr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("video: encoding took longer than %s: %w", o.Timeout, err)
		}
		return err
	}
	if waitErr != nil || writeErr != nil || closeErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return fmt.Errorf("video: ffmpeg failed: %s: %w", msg, errors.Join(waitErr, writeErr, closeErr))
	}
	return nil
}

// capped keeps the first n bytes written to it.
type capped struct {
	buf *bytes.Buffer
	n   int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.n > 0 {
		k := min(len(p), c.n)
		c.buf.Write(p[:k])
		c.n -= k
	}
	return len(p), nil
}
