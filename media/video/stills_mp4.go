package video

// Stills of an encoded MP4: a runner that encodes its clip itself (HEAD's self-encoding video
// runners on the Python road) hands over a file, not frames; its thumbnail and spritesheet are
// made from the few frames they show, decoded by ffmpeg.

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/media/webp"
)

// StillsOf returns the thumbnail and spritesheet of the MP4 at path, which Probe described as
// info: the same pictures Thumbnail and Spritesheet make from the clip's frames, from the ten
// (at most) frames the spritesheet shows (the first is the thumbnail), decoded by a locked-down
// ffmpeg (empty environment, reads only path, killed after o.Timeout or when ctx ends). At most
// those frames are held in memory, never the whole clip.
func StillsOf(ctx context.Context, path string, info Info, o Options) (thumb, sheet []byte, err error) {
	if info.Width <= 0 || info.Height <= 0 || info.Frames <= 0 {
		return nil, nil, fmt.Errorf("video: stills of a %dx%d clip of %d frames", info.Width, info.Height, info.Frames)
	}
	idx := spriteFrames(info.Frames)
	frames, err := decodeFrames(ctx, path, info.Width, info.Height, idx, o.Timeout)
	if err != nil {
		return nil, nil, err
	}
	f := Frames{Width: info.Width, Height: info.Height, FPS: 1, Frames: frames}
	at := make(map[int]int, len(idx))
	for k, i := range idx {
		at[i] = k
	}
	if thumb, err = webp.Encode(f.Frame(0), stillQuality); err != nil {
		return nil, nil, err
	}
	sheet, err = spritesheet(info.Frames, info.Width, info.Height, func(i int) image.Image { return f.Frame(at[i]) })
	return thumb, sheet, err
}

// decodeFrames decodes the frames at the given indices (ascending) of the MP4 at path as RGB24
// of width×height.
func decodeFrames(ctx context.Context, path string, width, height int, idx []int, timeout time.Duration) ([][]byte, error) {
	bin, err := FFmpegPath()
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	sel := make([]string, len(idx))
	for k, i := range idx {
		sel[k] = "eq(n\\," + strconv.Itoa(i) + ")"
	}
	cmd := exec.CommandContext(ctx, bin, "-nostdin", "-hide_banner", "-loglevel", "error",
		"-protocol_whitelist", "file", "-i", "file:"+path, "-map", "0:v:0",
		"-vf", "select="+strings.Join(sel, "+"), "-fps_mode", "passthrough",
		"-s", fmt.Sprintf("%dx%d", width, height), "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1")
	cmd.Env = []string{}
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &capped{buf: &stderr, n: 4096}
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("video: decoding stills: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("video: ffmpeg could not decode %s: %s: %w", path, strings.TrimSpace(stderr.String()), err)
	}
	size := 3 * width * height
	if len(out) != size*len(idx) {
		return nil, fmt.Errorf("video: ffmpeg decoded %d bytes of %s, want %d frames of %dx%d", len(out), path, len(idx), width, height)
	}
	frames := make([][]byte, len(idx))
	for k := range frames {
		frames[k] = out[k*size : (k+1)*size : (k+1)*size]
	}
	return frames, nil
}
