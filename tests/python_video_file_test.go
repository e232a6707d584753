package tests

import (
	"bytes"
	"image"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/webp"

	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// Self-encoding video runners on Python workers: fakes of HEAD's TTWan22T2VProdiaRunner (with
// export_in_runner, its default: [VideoManager().export_to_mp4(frames)]) and
// TTLTX23DistilledRunner (always: its pipeline writes an AV MP4 under TT_VIDEO_OUTPUT_DIR and
// run() answers [path]) answer a file path, not frames. On HEAD's road the MP4s are written by
// HEAD's real utils/video_manager.py. The worker sends the path; the server takes the file only
// from the worker's export directory, checks it with ffprobe, moves it into the job store and
// makes the stills from its decoded frames; refused files fail the job with a clear message and
// nothing is left behind.

// TestPythonVideoSelfEncoding: a Prodia job and an LTX job to completed → download → ffprobe
// (h264, 16 and 24 fps, their frame counts, LTX's AAC soundtrack) → thumbnail and spritesheet;
// a running Prodia job cancelled; a file outside the export directory, a symlink, a missing
// and a garbage file each fail their job naming the problem; no file is left in the export
// directory and the result directory holds only the completed jobs' files.
func TestPythonVideoSelfEncoding(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	for _, rd := range pythonRoads {
		t.Run(rd.name, func(t *testing.T) {
			t.Parallel()
			testPythonVideoSelfEncoding(t, rd.road(t))
		})
	}
}

// exportLeftovers lists the regular files and symlinks under a server's worker export
// directories (TT_VIDEO_OUTPUT_DIR/.worker-export).
func exportLeftovers(t *testing.T, outputDir string) []string {
	t.Helper()
	var left []string
	err := filepath.WalkDir(filepath.Join(outputDir, ".worker-export"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			left = append(left, path)
		}
		return nil
	})
	require.NoError(t, err)
	return left
}

// resultFiles lists the files of the result directory (not the export directories).
func resultFiles(t *testing.T, outputDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(outputDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// requireStills downloads a completed job's thumbnail and spritesheet (OpenAI's variants) and
// checks their sizes: the first frame's, and the spritesheet's grid of 160-pixel-wide tiles.
func requireStills(t *testing.T, s *server, id string, width, height int, sheet image.Rectangle) {
	t.Helper()
	for variant, want := range map[string]image.Rectangle{"thumbnail": image.Rect(0, 0, width, height), "spritesheet": sheet} {
		r := s.get(t, "/v1/videos/"+id+"/content?variant="+variant, "Authorization", bearer)
		require.Equalf(t, http.StatusOK, r.Status, "%s: %s", variant, r)
		img, err := webp.Decode(bytes.NewReader(r.Body))
		require.NoError(t, err, variant)
		require.Equal(t, want, img.Bounds(), variant)
	}
}

func submitVideoJob(t *testing.T, s *server, body string) string {
	t.Helper()
	r := s.postJSON(t, "/v1/videos/generations", body)
	require.Equalf(t, http.StatusAccepted, r.Status, "%s", r)
	return r.obj(t)["id"].(string)
}

func testPythonVideoSelfEncoding(t *testing.T, road e2e.PythonRoad) {
	prodiaDir, outside := t.TempDir(), t.TempDir()
	prodia := startPython(t, road, videoServerEnv(prodiaDir, map[string]string{
		"MODEL_RUNNER": "tt-wan2.2-t2v-prodia", "MOCK_STEP_SECONDS": "0.05", "FAKE_OUTSIDE_DIR": outside}))
	require.Contains(t, prodia.stderr.String(), "tt_model_runners.dit_runners.TTWan22T2VProdiaRunner")
	outDir := filepath.Join(prodiaDir, "out")
	var completed []string

	t.Run("Prodia export mode to MP4", func(t *testing.T) {
		id := submitVideoJob(t, prodia, `{"prompt":"a lighthouse at dusk","num_inference_steps":4,"seed":7}`)
		job := videoJob(t, prodia, id)
		require.Equal(t, "completed", job["status"], "%v", job)
		require.EqualValues(t, 100, job["progress"])
		info := probeDownload(t, prodia, id)
		require.Equal(t, []any{"h264", "yuv420p", 81, 16.0, 104, 60, true, ""},
			[]any{info.Codec, info.PixFmt, info.Frames, info.FPS, info.Width, info.Height, info.MoovFirst(), info.Audio.Codec})
		requireStills(t, prodia, id, 104, 60, image.Rect(0, 0, 5*104, 2*60))
		requireHosted(t, prodia, road, "video_generate_request")
		completed = append(completed, id)
	})
	t.Run("cancel while running", func(t *testing.T) {
		id := submitVideoJob(t, prodia, `{"prompt":"a long one","num_inference_steps":50,"seed":1}`)
		eventually(t, 30*time.Second, "the job runs with progress", func() bool {
			job := prodia.get(t, "/v1/videos/generations/"+id, "Authorization", bearer).obj(t)
			p, _ := job["progress"].(float64)
			return job["status"] == "in_progress" && p > 0
		})
		c := prodia.postJSON(t, "/v1/videos/generations/"+id+"/cancel", `{}`)
		require.Lessf(t, c.Status, 300, "%s", c)
		require.Equal(t, "cancelled", videoJob(t, prodia, id)["status"])
	})
	for _, c := range []struct{ fault, msg string }{
		{"outside", "is not in the worker's export directory"},
		{"symlink", "is not a regular file"},
		{"missing", "no such file or directory"},
		{"garbage", "is not an MP4"},
	} {
		t.Run("refused file: "+c.fault, func(t *testing.T) {
			id := submitVideoJob(t, prodia, `{"prompt":"spoilt [[file:`+c.fault+`]]","num_inference_steps":4,"seed":2}`)
			job := videoJob(t, prodia, id)
			require.Equal(t, "failed", job["status"], "%v", job)
			msg := job["error"].(map[string]any)["message"].(string)
			require.Contains(t, msg, c.msg)
			require.Contains(t, msg, "the runner's video file ")
			if c.fault == "outside" || c.fault == "symlink" { // the file outside is not ours: left alone
				left, err := filepath.Glob(filepath.Join(outside, "*.mp4"))
				require.NoError(t, err)
				require.Len(t, left, 1)
				require.NoError(t, os.Remove(left[0]))
			}
			r := prodia.get(t, "/v1/videos/generations/"+id+"/download", "Authorization", bearer)
			require.NotEqual(t, http.StatusOK, r.Status)
		})
	}
	t.Run("the worker is still serving", func(t *testing.T) {
		id := submitVideoJob(t, prodia, `{"prompt":"after the refusals","num_inference_steps":4,"seed":3}`)
		require.Equal(t, "completed", videoJob(t, prodia, id)["status"])
		completed = append(completed, id)
	})
	t.Run("nothing left behind", func(t *testing.T) {
		require.Empty(t, exportLeftovers(t, outDir))
		var want []string
		for _, id := range completed {
			want = append(want, id+".mp4", id+".spritesheet.webp", id+".thumbnail.webp")
		}
		require.ElementsMatch(t, want, resultFiles(t, outDir))
	})

	ltxDir := t.TempDir()
	ltx := startPython(t, road, videoServerEnv(ltxDir, map[string]string{
		"MODEL_RUNNER": "tt-ltx-2.3-distilled", "MOCK_STEP_SECONDS": "0.001"}))
	t.Run("LTX-2.3 AV MP4", func(t *testing.T) {
		id := submitVideoJob(t, ltx, `{"prompt":"waves on a pebble beach","num_inference_steps":8,"seed":5}`)
		job := videoJob(t, ltx, id)
		require.Equal(t, "completed", job["status"], "%v", job)
		info := probeDownload(t, ltx, id)
		require.Equal(t, []any{"h264", 145, 24.0, 240, 136, true, "aac", 48000, 2},
			[]any{info.Codec, info.Frames, info.FPS, info.Width, info.Height, info.MoovFirst(), info.Audio.Codec,
				info.Audio.SampleRate, info.Audio.Channels})
		require.InDelta(t, 145.0/24, info.Audio.Duration, 0.1)
		requireStills(t, ltx, id, 240, 136, image.Rect(0, 0, 5*160, 2*90))
		requireHosted(t, ltx, road, "video_generate_request")
		require.Empty(t, exportLeftovers(t, filepath.Join(ltxDir, "out")))
	})
}
