// Package video turns generated frames into the files a video job serves: an H.264 MP4 encoded
// by Debian's ffmpeg as a locked-down subprocess (raw RGB on stdin, libx264 with the Python
// server's settings: CRF 23, yuv420p, High@4.2, +faststart; a soundtrack muxed as AAC from a
// second pipe), a WebP thumbnail and a WebP spritesheet of evenly spaced frames.
package video

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Frames is a clip: Frames[i] is one RGB24 frame of Width×Height (3 bytes a pixel, rows top
// to bottom), shown at FPS frames a second, with an optional soundtrack.
type Frames struct {
	Width, Height, FPS int
	Frames             [][]byte
	// Audio, when set, is muxed into the MP4 as AAC (the text-to-audio-video models).
	Audio *Audio
}

// Audio is a soundtrack: Samples are 16-bit PCM, interleaved by channel, at SampleRate.
type Audio struct {
	SampleRate, Channels int
	Samples              []int16
}

// Duration is the soundtrack's length.
func (a Audio) Duration() time.Duration {
	if a.SampleRate <= 0 || a.Channels <= 0 {
		return 0
	}
	return time.Duration(len(a.Samples)/a.Channels) * time.Second / time.Duration(a.SampleRate)
}

// Duration is the clip's length: its frame count over its rate.
func (f Frames) Duration() time.Duration {
	if f.FPS <= 0 {
		return 0
	}
	return time.Duration(len(f.Frames)) * time.Second / time.Duration(f.FPS)
}

// AudioBitrate is the AAC bitrate, HEAD's export_to_mp4_with_audio's 192k.
const AudioBitrate = "192k"

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
	if a := f.Audio; a != nil {
		switch {
		case a.SampleRate < 8000 || a.SampleRate > 192000:
			return fmt.Errorf("video: audio sample rate %d Hz is outside 8000-192000", a.SampleRate)
		case a.Channels != 1 && a.Channels != 2:
			return fmt.Errorf("video: audio has %d channels; 1 or 2 are muxed", a.Channels)
		case len(a.Samples) == 0 || len(a.Samples)%a.Channels != 0:
			return fmt.Errorf("video: %d audio samples are not whole frames of %d channels", len(a.Samples), a.Channels)
		}
		// The streams must last as long as each other, within a video frame: the muxer would
		// otherwise cut the longer one (HEAD's -shortest) or leave silence or a frozen picture.
		if d := a.Duration() - f.Duration(); d > time.Second/time.Duration(f.FPS) || -d > time.Second/time.Duration(f.FPS) {
			return fmt.Errorf("video: the audio lasts %s, the picture %s: more than a frame apart", a.Duration(), f.Duration())
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
// frames on stdin (and a soundtrack's PCM on a second pipe, its fd 3: no temporary file, unlike
// HEAD's WAV), may write only path, and is killed after o.Timeout or when ctx ends.
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
		"-pix_fmt", "rgb24", "-r", strconv.Itoa(f.FPS), "-i", "pipe:0"}
	if f.Audio != nil {
		args = append(args, "-f", "s16le", "-ar", strconv.Itoa(f.Audio.SampleRate), "-ac", strconv.Itoa(f.Audio.Channels),
			"-i", "pipe:3", "-map", "0:v:0", "-map", "1:a:0", "-c:a", "aac", "-b:a", AudioBitrate, "-shortest")
	} else {
		args = append(args, "-an")
	}
	args = append(args, "-c:v", "libx264")
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
	var audioR, audioW *os.File
	if f.Audio != nil {
		if audioR, audioW, err = os.Pipe(); err != nil {
			_ = stdin.Close()
			return fmt.Errorf("video: audio pipe: %w", err)
		}
		cmd.ExtraFiles = []*os.File{audioR} // ffmpeg's fd 3: pipe:3
	}
	startErr := cmd.Start()
	if audioR != nil {
		_ = audioR.Close() // the child has its copy
	}
	if startErr != nil {
		if audioW != nil {
			_ = audioW.Close()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("video: encoding took longer than %s: %w", o.Timeout, ctx.Err())
		}
		return fmt.Errorf("%w: %w", ErrNoFFmpeg, startErr)
	}
	// The soundtrack is written beside the frames: ffmpeg reads its two inputs interleaved,
	// so writing one whole before the other could fill a pipe and stall both sides.
	audioErr := make(chan error, 1)
	if audioW != nil {
		go func() {
			_, err := audioW.Write(pcmBytes(f.Audio.Samples))
			audioErr <- errors.Join(err, audioW.Close())
		}()
	} else {
		audioErr <- nil
	}
	var writeErr error
	for _, fr := range f.Frames {
		if _, writeErr = stdin.Write(fr); writeErr != nil {
			break
		}
	}
	closeErr := stdin.Close()
	waitErr := cmd.Wait()
	if audioW != nil {
		_ = audioW.Close() // unblocks the writer if ffmpeg died before reading it all
	}
	writeErr = errors.Join(writeErr, <-audioErr)
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

// pcmBytes is samples as little-endian bytes (s16le).
func pcmBytes(samples []int16) []byte {
	b := make([]byte, 2*len(samples))
	for i, v := range samples {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
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
