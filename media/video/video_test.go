package video

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/webp"
)

// needFFmpeg skips without ffmpeg, except under CI=true (.ci/run installs it).
func needFFmpeg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ffprobe"); err != nil || Check(context.Background()) != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ffmpeg/ffprobe with libx264 are missing; .ci/run installs Debian's ffmpeg")
		}
		t.Skip("ffmpeg/ffprobe with libx264 are missing (Debian ffmpeg); skipping")
	}
}

// clip is n frames of a square moving across a gradient.
func clip(w, h, n, fps int) Frames {
	f := Frames{Width: w, Height: h, FPS: fps}
	for i := range n {
		fr := make([]byte, w*h*3)
		for y := range h {
			for x := range w {
				p := (y*w + x) * 3
				fr[p], fr[p+1], fr[p+2] = byte(x*255/w), byte(y*255/h), byte(i*255/n)
				if x >= i*2 && x < i*2+8 && y >= 8 && y < 16 {
					fr[p], fr[p+1], fr[p+2] = 255, 255, 255
				}
			}
		}
		f.Frames = append(f.Frames, fr)
	}
	return f
}

func TestEncodeMP4Probe(t *testing.T) {
	needFFmpeg(t)
	for _, tc := range []struct {
		name         string
		w, h, n, fps int
	}{
		{"wan-16fps", 64, 48, 17, 16},
		{"ltx-24fps", 96, 64, 25, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.mp4")
			require.NoError(t, EncodeMP4(context.Background(), path, clip(tc.w, tc.h, tc.n, tc.fps), DefaultOptions))
			info, err := Probe(context.Background(), path)
			require.NoError(t, err)
			require.Equal(t, "h264", info.Codec)
			require.Equal(t, "yuv420p", info.PixFmt)
			require.Equal(t, "High", info.Profile)
			require.Equal(t, 42, info.Level)
			require.Equal(t, tc.w, info.Width)
			require.Equal(t, tc.h, info.Height)
			require.InDelta(t, float64(tc.fps), info.FPS, 1e-9)
			require.Equal(t, tc.n, info.Frames)
			require.True(t, info.MoovFirst(), "moov before mdat (+faststart): %v", info.Boxes)
		})
	}
}

func TestEncodeMP4Refusals(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	dir := t.TempDir()
	bad := clip(64, 48, 2, 16)
	bad.Frames[1] = bad.Frames[1][:10]
	for name, f := range map[string]Frames{
		"odd size":    {Width: 63, Height: 48, FPS: 16, Frames: [][]byte{make([]byte, 63*48*3)}},
		"no frames":   {Width: 64, Height: 48, FPS: 16},
		"short frame": bad,
		"no fps":      {Width: 64, Height: 48, Frames: [][]byte{make([]byte, 64*48*3)}},
	} {
		require.Error(t, EncodeMP4(ctx, filepath.Join(dir, "x.mp4"), f, DefaultOptions), name)
	}
	// An unwritable output is an error from ffmpeg, not a hang.
	err := EncodeMP4(ctx, filepath.Join(dir, "missing", "x.mp4"), clip(64, 48, 2, 16), DefaultOptions)
	require.ErrorContains(t, err, "ffmpeg failed")
	// The timeout kills a slow encode.
	o := DefaultOptions
	o.Timeout = time.Nanosecond
	err = EncodeMP4(ctx, filepath.Join(dir, "t.mp4"), clip(64, 48, 4, 16), o)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestMissingFFmpeg(t *testing.T) {
	old := FFmpegPath
	t.Cleanup(func() { FFmpegPath = old })
	FFmpegPath = func() (string, error) { return "", ErrNoFFmpeg }
	require.ErrorIs(t, Check(context.Background()), ErrNoFFmpeg)
	err := EncodeMP4(context.Background(), filepath.Join(t.TempDir(), "x.mp4"), clip(64, 48, 1, 16), DefaultOptions)
	require.True(t, errors.Is(err, ErrNoFFmpeg))
}

func TestStills(t *testing.T) {
	f := clip(320, 240, 21, 16)
	th, err := Thumbnail(f)
	require.NoError(t, err)
	img, err := webp.Decode(bytes.NewReader(th))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 320, 240), img.Bounds())

	sheet, err := Spritesheet(f)
	require.NoError(t, err)
	img, err = webp.Decode(bytes.NewReader(sheet))
	require.NoError(t, err)
	cols, rows, tw, th2 := SpriteGrid(21, 320, 240)
	require.Equal(t, []int{5, 2, 160, 120}, []int{cols, rows, tw, th2})
	require.Equal(t, image.Rect(0, 0, 800, 240), img.Bounds())
}

// tone is seconds of a sine at hz, channels interleaved (the right channel an octave up).
func tone(rate, channels int, seconds, hz float64) *Audio {
	n := int(float64(rate) * seconds)
	a := &Audio{SampleRate: rate, Channels: channels, Samples: make([]int16, n*channels)}
	for i := range n {
		for c := range channels {
			a.Samples[i*channels+c] = int16(12000 * math.Sin(2*math.Pi*hz*float64(c+1)*float64(i)/float64(rate)))
		}
	}
	return a
}

// TestEncodeMP4WithAudio: a soundtrack comes out as an AAC stream beside the H.264 one, as
// long as the picture, not silent, and ffmpeg leaves nothing but the MP4 behind.
func TestEncodeMP4WithAudio(t *testing.T) {
	needFFmpeg(t)
	for _, tc := range []struct {
		name           string
		n, fps         int
		rate, channels int
	}{
		{"minimax-24fps-stereo", 48, 24, 48000, 2},
		{"16fps-mono-44k1", 24, 16, 44100, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.mp4")
			f := clip(64, 48, tc.n, tc.fps)
			f.Audio = tone(tc.rate, tc.channels, float64(tc.n)/float64(tc.fps), 440)
			require.NoError(t, EncodeMP4(context.Background(), path, f, DefaultOptions))
			info, err := Probe(context.Background(), path)
			require.NoError(t, err)
			require.Equal(t, "h264", info.Codec)
			require.Equal(t, tc.n, info.Frames)
			require.Equal(t, AudioInfo{Codec: "aac", SampleRate: tc.rate, Channels: tc.channels, Duration: info.Audio.Duration}, info.Audio)
			frame := 1 / float64(tc.fps)
			require.InDelta(t, float64(tc.n)/float64(tc.fps), info.Duration, frame/2, "the picture's length")
			require.InDelta(t, info.Duration, info.Audio.Duration, frame, "the soundtrack lasts as long as the picture")
			require.True(t, info.MoovFirst(), "%v", info.Boxes)

			// The track carries the tone: its decoded level is the tone's, not silence.
			out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0:a:0", "-f", "s16le", "-ac", "1", "pipe:1").Output()
			require.NoError(t, err)
			var sum float64
			for i := 0; i+1 < len(out); i += 2 {
				v := float64(int16(uint16(out[i]) | uint16(out[i+1])<<8))
				sum += v * v
			}
			rms := math.Sqrt(sum / float64(len(out)/2))
			require.Greater(t, rms, 4000.0, "the muxed track is (nearly) silent")

			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only the MP4 is left: %v", entries)
		})
	}
}

func TestEncodeMP4AudioRefusals(t *testing.T) {
	f := clip(64, 48, 24, 24)
	for name, a := range map[string]*Audio{
		"too short":     tone(48000, 2, 0.5, 440),
		"too long":      tone(48000, 2, 1.2, 440),
		"five channels": {SampleRate: 48000, Channels: 5, Samples: make([]int16, 5*48000)},
		"no samples":    {SampleRate: 48000, Channels: 2},
		"odd samples":   {SampleRate: 48000, Channels: 2, Samples: make([]int16, 2*48000+1)},
		"rate 100 Hz":   {SampleRate: 100, Channels: 1, Samples: make([]int16, 100)},
	} {
		g := f
		g.Audio = a
		err := EncodeMP4(context.Background(), filepath.Join(t.TempDir(), "x.mp4"), g, DefaultOptions)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "audio", name)
	}
}

// TestStillsOf: the stills of an encoded MP4 (a self-encoding runner's) have the same shape
// as those made from its frames, show the same pictures (within H.264's loss), and a file that
// is not a video is refused.
func TestStillsOf(t *testing.T) {
	needFFmpeg(t)
	ctx := context.Background()
	f := clip(96, 64, 21, 16)
	path := filepath.Join(t.TempDir(), "clip.mp4")
	require.NoError(t, EncodeMP4(ctx, path, f, DefaultOptions))
	info, err := Probe(ctx, path)
	require.NoError(t, err)
	th, sheet, err := StillsOf(ctx, path, info, DefaultOptions)
	require.NoError(t, err)
	wantTh, err := Thumbnail(f)
	require.NoError(t, err)
	wantSheet, err := Spritesheet(f)
	require.NoError(t, err)
	for _, c := range []struct{ got, want []byte }{{th, wantTh}, {sheet, wantSheet}} {
		got, err := webp.Decode(bytes.NewReader(c.got))
		require.NoError(t, err)
		want, err := webp.Decode(bytes.NewReader(c.want))
		require.NoError(t, err)
		require.Equal(t, want.Bounds(), got.Bounds())
		var diff, n float64
		b := got.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r1, g1, b1, _ := got.At(x, y).RGBA()
				r2, g2, b2, _ := want.At(x, y).RGBA()
				diff += math.Abs(float64(r1)-float64(r2)) + math.Abs(float64(g1)-float64(g2)) + math.Abs(float64(b1)-float64(b2))
				n += 3
			}
		}
		require.Less(t, diff/n/257, 12.0, "mean difference per channel (of 255)")
	}

	junk := filepath.Join(t.TempDir(), "junk.mp4")
	require.NoError(t, os.WriteFile(junk, []byte("\x00\x00\x00\x10ftypisomnot a video at all"), 0o600))
	_, _, err = StillsOf(ctx, junk, info, DefaultOptions)
	require.ErrorContains(t, err, "could not decode")
}
