package server

// Adopting the MP4 a self-encoding runner made (HEAD's TTLTX23DistilledRunner, the Prodia
// runners and MiniMax with export_in_runner, on the Python road): procrunner has taken the file
// from the worker's export directory (a regular file, size-capped, an MP4 box); here it is
// checked against the job, moved into the job store and its stills are made.

import (
	"context"
	"fmt"
	"math"

	"github.com/tenstorrent/tt-media-server-go/media/video"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// adopt checks the runner's MP4 with ffprobe — H.264, the model's frame rate, the clip the job
// asked for (size and frame count), a soundtrack when the model makes one — moves it into the
// job's files (jobs.Files.Adopt: a rename) and makes the thumbnail and spritesheet from its
// decoded frames. On error nothing of the job's files is left (the caller removes them) and
// the runner's file is gone.
func (v *videoRunner) adopt(ctx context.Context, id string, req *runners.VideoRequest, clip *runners.VideoResult) (string, error) {
	info, err := video.Probe(ctx, clip.File)
	if err != nil {
		return "", fmt.Errorf("the runner's MP4 is not a readable video: %w", err)
	}
	if err := checkAdopted(info, req, clip.FPS, v.wantAudio); err != nil {
		return "", err
	}
	name, err := v.files.Adopt(id, "mp4", clip.File)
	if err != nil {
		return "", err
	}
	thumb, sheet, err := video.StillsOf(ctx, v.files.Path(name), info, v.opts)
	if err == nil {
		err = v.writeStill(id, "thumbnail.webp", func() ([]byte, error) { return thumb, nil })
	}
	if err == nil {
		err = v.writeStill(id, "spritesheet.webp", func() ([]byte, error) { return sheet, nil })
	}
	return name, err
}

// checkAdopted compares what ffprobe says of a runner's MP4 with the clip the job expects.
func checkAdopted(info video.Info, req *runners.VideoRequest, fps int, wantAudio bool) error {
	var bad []string
	if info.Codec != "h264" {
		bad = append(bad, fmt.Sprintf("codec %q, not h264", info.Codec))
	}
	if math.Abs(info.FPS-float64(fps)) > 0.01 {
		bad = append(bad, fmt.Sprintf("%.3g fps, not the model's %d", info.FPS, fps))
	}
	if info.Frames <= 0 || (req.Frames > 0 && info.Frames != req.Frames) {
		bad = append(bad, fmt.Sprintf("%d frames, not %d", info.Frames, req.Frames))
	}
	if info.Width <= 0 || info.Height <= 0 || (req.Width > 0 && (info.Width != req.Width || info.Height != req.Height)) {
		bad = append(bad, fmt.Sprintf("%dx%d, not %dx%d", info.Width, info.Height, req.Width, req.Height))
	}
	if wantAudio && info.Audio.Codec == "" {
		bad = append(bad, "no soundtrack, though the model makes one")
	}
	if len(bad) > 0 {
		return fmt.Errorf("the runner's MP4 is not the clip the job asked for: %v", bad)
	}
	return nil
}
