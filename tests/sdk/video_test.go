package sdk_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/video"
)

func startVideoServer(t *testing.T) *proc {
	t.Helper()
	if video.Check(context.Background()) != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ffmpeg with libx264 is missing; .ci/run installs Debian's ffmpeg")
		}
		t.Skip("ffmpeg with libx264 is missing (Debian ffmpeg): the video service does not start; skipping")
	}
	dir := t.TempDir()
	p := launch(t, "video server", map[string]string{"MODEL_RUNNER": "tt-wan2.2", "MOCK_WARMUP_SECONDS": "0",
		"MOCK_STEP_SECONDS": "0.005", "MOCK_VIDEO_SCALE": "8", "DEVICE_IDS": "(0)", "VIDEO_POLL_AFTER_MS": "50",
		"TT_VIDEO_OUTPUT_DIR": filepath.Join(dir, "out"), "JOB_DATABASE_PATH": filepath.Join(dir, "jobs.db")})
	p.waitLiveness(t, http.StatusOK, 20*time.Second)
	return p
}

// TestGoSDKVideo: openai-go's Videos.NewAndPoll (multipart create, polling the job), the MP4
// from DownloadContent (ffprobe), the thumbnail variant, List, Delete, and Remix refused with
// a 400 naming it.
func TestGoSDKVideo(t *testing.T) {
	t.Parallel()
	p := startVideoServer(t)
	client := openai.NewClient(option.WithBaseURL(p.V1()), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	ctx := t.Context()
	v, err := client.Videos.NewAndPoll(ctx, openai.VideoNewParams{Prompt: "a lighthouse at dusk", Model: "tt-wan2.2", Seconds: "5"}, 50)
	require.NoError(t, err)
	require.Equal(t, openai.VideoStatusCompleted, v.Status)
	require.Equal(t, int64(100), v.Progress)
	require.Equal(t, "104x60", string(v.Size))

	resp, err := client.Videos.DownloadContent(ctx, v.ID, openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantVideo})
	require.NoError(t, err)
	mp4, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sdk.mp4")
	require.NoError(t, os.WriteFile(path, mp4, 0o600))
	info, err := video.Probe(ctx, path)
	require.NoError(t, err)
	require.Equal(t, []any{"h264", "yuv420p", 81, 16.0, true}, []any{info.Codec, info.PixFmt, info.Frames, info.FPS, info.MoovFirst()})

	thumb, err := client.Videos.DownloadContent(ctx, v.ID, openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
	require.NoError(t, err)
	require.Equal(t, "image/webp", thumb.Header.Get("Content-Type"))
	_ = thumb.Body.Close()

	page, err := client.Videos.List(ctx, openai.VideoListParams{Limit: openai.Int(10)})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)

	_, err = client.Videos.Remix(ctx, v.ID, openai.VideoRemixParams{Prompt: "again"})
	requireAPIError(t, err, http.StatusBadRequest, "remix", "unsupported_operation", nil)

	del, err := client.Videos.Delete(ctx, v.ID)
	require.NoError(t, err)
	require.True(t, del.Deleted)
	_, err = client.Videos.Get(ctx, v.ID)
	requireAPIError(t, err, http.StatusNotFound, "", "video_not_found", nil)
}

// TestNodeSDKVideo runs video.cjs: the npm package's videos.create, retrieve (polled),
// downloadContent and remix (refused) against the video server.
func TestNodeSDKVideo(t *testing.T) {
	t.Parallel()
	node, modules := nodeSDK(t)
	p := startVideoServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "video.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "TT_VIDEO_URL="+p.V1(), "TT_API_KEY="+apiKey)
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", mustVersion(node), out)
	require.NoError(t, err, "video.cjs failed")
	require.NotContains(t, string(out), "FAIL")
	require.Equal(t, 3, strings.Count(string(out), "ok "), "every check ran")
}
