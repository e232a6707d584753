package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/media/video"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/wan"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// videoEnv is a video server over the real scheduler and the simulated Wan runner, with an
// SQLite job store and a result directory of its own; done receives each job's final state.
type videoEnv struct {
	srv   *Server
	h     http.Handler
	store *jobs.DB
	files *jobs.Files
	done  chan jobs.State
}

func needVideoTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ffprobe"); err != nil || video.Check(context.Background()) != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ffmpeg/ffprobe with libx264 are missing; .ci/run installs Debian's ffmpeg")
		}
		t.Skip("ffmpeg/ffprobe with libx264 are missing (Debian ffmpeg); skipping")
	}
}

func newVideoEnv(t *testing.T, runner string, step time.Duration, mutate func(*config.Settings)) *videoEnv {
	t.Helper()
	st := testSettings()
	st.ModelRunner, st.Mock = runner, true
	st.Video = config.VideoSettings{MaxJobs: 100, Retention: time.Hour, MaxStuck: time.Hour, Async: true, CRF: 23,
		Preset: "veryfast", EncodeTimeout: time.Minute, MockScale: 8, MaxImageBytes: 1 << 20, PollAfter: 1500 * time.Millisecond, ReplicaID: "r1"}
	st.MockStepLatency = step
	if mutate != nil {
		mutate(st)
	}
	groups := []config.DeviceGroup{{ID: "0", Devices: []int{0}}}
	factory := wan.Factory(runner)
	sched := scheduler.New(scheduler.Config{Groups: groups, QueueSize: 8, MaxBatchSize: 1},
		func(g config.DeviceGroup) (runners.Runner, error) {
			return factory(runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Settings: st})
		})
	sched.Start(context.Background())
	require.Eventually(t, sched.Ready, 10*time.Second, time.Millisecond)
	store, err := jobs.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	files, err := jobs.NewFiles(t.TempDir())
	require.NoError(t, err)
	s := New(Deps{Settings: st, Service: runners.ServiceVideo, Sched: sched, Video: &VideoJobs{Store: store, Files: files}})
	e := &videoEnv{srv: s, h: s.Handler(), store: store, files: files, done: make(chan jobs.State, 16)}
	s.video.runner.done = func(_ string, st jobs.State) { e.done <- st }
	t.Cleanup(func() {
		s.CloseVideo()
		require.NoError(t, sched.Stop(context.Background()))
		_ = store.Close()
	})
	return e
}

const videoAuth = "Bearer k"

// videoAnswer is a recorded response's status and headers.
type videoAnswer struct {
	StatusCode int
	Header     http.Header
}

func (e *videoEnv) post(t *testing.T, path string, body any) (videoAnswer, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	w := do(e.h, http.MethodPost, path, "application/json", videoAuth, b)
	var out map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return videoAnswer{w.Code, w.Header()}, out
}

func (e *videoEnv) get(t *testing.T, path string) (videoAnswer, []byte) {
	t.Helper()
	w := do(e.h, http.MethodGet, path, "", videoAuth, nil)
	return videoAnswer{w.Code, w.Header()}, w.Body.Bytes()
}

func (e *videoEnv) wait(t *testing.T) jobs.State {
	t.Helper()
	select {
	case st := <-e.done:
		return st
	case <-time.After(60 * time.Second):
		t.Fatal("the video job did not finish in 60 s")
	}
	return ""
}

func TestVideoPythonFlow(t *testing.T) {
	needVideoTools(t)
	e := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
	resp, job := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "a red fox", "num_inference_steps": 5})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, job)
	require.Equal(t, "queued", job["status"])
	params := job["request_parameters"].(map[string]any)
	require.Equal(t, true, params["seed_generated"], "a random seed is drawn and reported")
	require.NotZero(t, params["seed"])
	require.Equal(t, jobs.Completed, e.wait(t))
	id := job["id"].(string)

	r, body := e.get(t, "/v1/videos/generations/"+id)
	require.Equal(t, http.StatusOK, r.StatusCode)
	var got pythonJob
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, "completed", got.Status)
	require.Equal(t, 100, got.Progress)

	r, mp4 := e.get(t, "/v1/videos/generations/"+id+"/download")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "video/mp4", r.Header.Get("Content-Type"))
	path := filepath.Join(t.TempDir(), "v.mp4")
	require.NoError(t, os.WriteFile(path, mp4, 0o600))
	info, err := video.Probe(context.Background(), path)
	require.NoError(t, err)
	require.Equal(t, "h264", info.Codec)
	require.Equal(t, "yuv420p", info.PixFmt)
	require.Equal(t, 81, info.Frames)
	require.InDelta(t, 16, info.FPS, 1e-9)
	require.Equal(t, []int{832 / 8, 480 / 8}, []int{info.Width, info.Height})
	require.True(t, info.MoovFirst())

	// A Range request gets the bytes asked for.
	req, _ := http.NewRequest(http.MethodGet, "/v1/videos/generations/"+id+"/download", nil)
	req.Header.Set("Authorization", videoAuth)
	req.Header.Set("Range", "bytes=0-99")
	w := doReq(e.h, req)
	require.Equal(t, http.StatusPartialContent, w.Code)
	require.Equal(t, mp4[:100], w.Body.Bytes())

	// The legacy twin answers the same, with the deprecation headers.
	r, _ = e.get(t, "/video/generations/"+id)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "true", r.Header.Get("Deprecation"))

	r, body = e.get(t, "/v1/videos/jobs")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, string(body), id)
}

func doReq(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestVideoOpenAIFlow(t *testing.T) {
	needVideoTools(t)
	e := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
	resp, v := e.post(t, "/v1/videos", map[string]any{"prompt": "waves", "model": "tt-wan2.2", "seconds": "5", "size": "104x60"})
	require.Equal(t, http.StatusOK, resp.StatusCode, v)
	require.Equal(t, "video", v["object"])
	require.Equal(t, jobs.Completed, e.wait(t))
	id := v["id"].(string)
	r, body := e.get(t, "/v1/videos/"+id)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "1500", r.Header.Get("openai-poll-after-ms"))
	require.Contains(t, string(body), `"status":"completed"`)
	for variant, ct := range map[string]string{"video": "video/mp4", "thumbnail": "image/webp", "spritesheet": "image/webp"} {
		r, b := e.get(t, "/v1/videos/"+id+"/content?variant="+variant)
		require.Equal(t, http.StatusOK, r.StatusCode, variant)
		require.Equal(t, ct, r.Header.Get("Content-Type"))
		require.NotEmpty(t, b)
	}
	r, body = e.get(t, "/v1/videos?limit=1&order=asc")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, string(body), id)

	w := do(e.h, http.MethodDelete, "/v1/videos/"+id, "", videoAuth, nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	left, err := os.ReadDir(e.files.Dir)
	require.NoError(t, err)
	require.Empty(t, left, "DELETE removes the job's files")
	r, _ = e.get(t, "/v1/videos/"+id)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
}

// TestVideoCancelRunning: cancelling a running job stops the device at its next step and
// frees it for the next job; nothing is written.
func TestVideoCancelRunning(t *testing.T) {
	e := newVideoEnv(t, catalogue.RunnerWan22, 100*time.Millisecond, nil)
	_, job := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "slow", "num_inference_steps": 50})
	id := job["id"].(string)
	require.Eventually(t, func() bool {
		j, err := e.store.Get(context.Background(), id)
		return err == nil && j.Status == jobs.InProgress && j.Progress > 0
	}, 20*time.Second, 5*time.Millisecond)
	start := time.Now()
	resp, out := e.post(t, "/v1/videos/generations/"+id+"/cancel", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	require.Equal(t, "cancelled", out["status"])
	require.Equal(t, jobs.Cancelled, e.wait(t))
	require.Less(t, time.Since(start), 5*time.Second, "the device stops at the next step, not after 50")
	left, _ := os.ReadDir(e.files.Dir)
	require.Empty(t, left)
	resp, out = e.post(t, "/v1/videos/generations/"+id+"/cancel", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, out)
}

// TestVideoStorageFull: a disk that fills while the MP4 is written fails the job with
// storage_error and leaves nothing half-written.
func TestVideoStorageFull(t *testing.T) {
	e := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
	e.srv.video.runner.encode = func(_ context.Context, path string, _ video.Frames, _ video.Options) error {
		if err := os.WriteFile(path, []byte("half an mp4"), 0o600); err != nil {
			return err
		}
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	_, job := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "x", "num_inference_steps": 4})
	require.Equal(t, jobs.Failed, e.wait(t))
	j, err := e.store.Get(context.Background(), job["id"].(string))
	require.NoError(t, err)
	require.Equal(t, jobs.CodeStorage, j.ErrorCode)
	require.Contains(t, j.ErrorMsg, "no space left")
	left, _ := os.ReadDir(e.files.Dir)
	require.Empty(t, left, "nothing half-written is left")
}

func TestVideoMaxJobs(t *testing.T) {
	e := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, func(s *config.Settings) { s.Video.MaxJobs = 1 })
	e.srv.video.runner.encode = func(context.Context, string, video.Frames, video.Options) error { return nil }
	resp, _ := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "x", "num_inference_steps": 4})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	e.wait(t)
	resp, out := e.post(t, "/v1/videos/generations", map[string]any{"prompt": "y", "num_inference_steps": 4})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, out)
	require.Contains(t, out["detail"], "MAX_JOBS")
}

// A burst of accepted jobs larger than the scheduler's queue (8 here, one device) is not
// failed: the jobs past the queue wait in the store, queued, and all complete.
func TestVideoBurstBeyondQueueCompletes(t *testing.T) {
	e := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
	e.srv.video.runner.encode = func(context.Context, string, video.Frames, video.Options) error { return nil }
	const n = 14
	for i := range n {
		resp, out := e.post(t, "/v1/videos/generations", map[string]any{"prompt": fmt.Sprintf("p%d", i), "num_inference_steps": 4})
		require.Equal(t, http.StatusAccepted, resp.StatusCode, out)
	}
	for i := range n {
		require.Equal(t, jobs.Completed, e.wait(t), "job %d of the burst", i)
	}
}

func videoPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8))))
	return b.Bytes()
}

func uploadBody(t *testing.T, ctype string, img []byte, fields map[string]string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		require.NoError(t, mw.WriteField(k, v))
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="image"; filename="a"`)
	h.Set("Content-Type", ctype)
	pw, err := mw.CreatePart(h)
	require.NoError(t, err)
	_, _ = pw.Write(img)
	require.NoError(t, mw.Close())
	return b.Bytes(), mw.FormDataContentType()
}

// TestVideoBadInputs: every wrong value is a 4xx naming its field, and nothing is queued.
func TestVideoBadInputs(t *testing.T) {
	t2v := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
	i2v := newVideoEnv(t, catalogue.RunnerWan22I2V, time.Millisecond, nil)
	mm := newVideoEnv(t, catalogue.RunnerMiniMaxH3T2VA, time.Millisecond, nil)
	img := base64.StdEncoding.EncodeToString(videoPNG(t))
	for _, tc := range []struct {
		name   string
		e      *videoEnv
		path   string
		body   any
		status int
		field  string
	}{
		{"steps too few", t2v, "/v1/videos/generations", map[string]any{"prompt": "x", "num_inference_steps": 3}, 422, "num_inference_steps"},
		{"steps too many", t2v, "/v1/videos/generations", map[string]any{"prompt": "x", "num_inference_steps": 51}, 422, "num_inference_steps"},
		{"unknown field", t2v, "/v1/videos/generations", map[string]any{"prompt": "x", "resolution": "1080P"}, 422, "resolution"},
		{"no prompt", t2v, "/v1/videos/generations", map[string]any{"seed": 1}, 422, "prompt"},
		{"seed not an int", t2v, "/v1/videos/generations", map[string]any{"prompt": "x", "seed": "abc"}, 422, "seed"},
		{"aspect on wan", t2v, "/v1/videos/generations", map[string]any{"prompt": "x", "aspect_ratio": "1:1"}, 422, "aspect_ratio"},
		{"text only on i2v", i2v, "/v1/videos/generations", map[string]any{"prompt": "x"}, 422, "image_prompts"},
		{"frame_pos 81", i2v, "/v1/videos/generations/i2v", map[string]any{"prompt": "x", "image_prompts": []any{map[string]any{"image": img, "frame_pos": 81}}}, 422, "frame_pos"},
		{"duplicate frame_pos", i2v, "/v1/videos/generations/i2v", map[string]any{"prompt": "x", "image_prompts": []any{map[string]any{"image": img}, map[string]any{"image": img}}}, 422, "frame_pos"},
		{"undecodable image", i2v, "/v1/videos/generations/i2v", map[string]any{"prompt": "x", "image_prompts": []any{map[string]any{"image": "aGVsbG8="}}}, 422, "image_prompts[0]"},
		{"minimax aspect", mm, "/v1/videos/generations", map[string]any{"prompt": "x", "aspect_ratio": "2:1"}, 422, "aspect_ratio"},
		{"minimax duration", mm, "/v1/videos/generations", map[string]any{"prompt": "x", "duration_seconds": 20}, 422, "duration_seconds"},
		{"openai seconds", t2v, "/v1/videos", map[string]any{"prompt": "x", "seconds": "8"}, 400, "seconds"},
		{"openai size", t2v, "/v1/videos", map[string]any{"prompt": "x", "size": "1280x720"}, 400, "size"},
		{"openai model", t2v, "/v1/videos", map[string]any{"prompt": "x", "model": "sora-2"}, 404, "model"},
		{"openai unknown", t2v, "/v1/videos", map[string]any{"prompt": "x", "quality": "hd"}, 400, "quality"},
		{"openai no prompt", t2v, "/v1/videos", map[string]any{"model": "tt-wan2.2"}, 400, "prompt"},
		{"openai remix", t2v, "/v1/videos/video_x/remix", map[string]any{"prompt": "x"}, 400, "remix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, out := tc.e.post(t, tc.path, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, out)
			b, _ := json.Marshal(out)
			require.Contains(t, string(b), tc.field)
		})
	}
	for _, tc := range []struct {
		name, path string
		status     int
		field      string
	}{
		{"unknown job", "/v1/videos/generations/video_nope", 404, "not found"},
		{"unknown video", "/v1/videos/video_nope", 404, "not found"},
		{"bad variant", "/v1/videos/video_nope/content?variant=gif", 400, "variant"},
		{"bad limit", "/v1/videos?limit=0", 400, "limit"},
		{"bad order", "/v1/videos?order=up", 400, "order"},
		{"unknown query", "/v1/videos?before=x", 400, "before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, b := t2v.get(t, tc.path)
			require.Equal(t, tc.status, r.StatusCode, string(b))
			require.Contains(t, strings.ToLower(string(b)), tc.field)
		})
	}
	// The upload route: 415 for a non-image type, 413 over the cap, 422 for undecodable bytes.
	for _, tc := range []struct {
		name   string
		ctype  string
		img    []byte
		status int
	}{
		{"text/plain", "text/plain", []byte("hi"), 415},
		{"too large", "image/png", make([]byte, 2<<20), 413},
		{"undecodable", "image/png", []byte("not a png"), 422},
	} {
		t.Run("upload "+tc.name, func(t *testing.T) {
			body, ct := uploadBody(t, tc.ctype, tc.img, map[string]string{"prompt": "x"})
			w := do(i2v.h, http.MethodPost, "/v1/videos/generations/i2v/upload", ct, videoAuth, body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
		})
	}
	n, _, err := t2v.store.List(context.Background(), jobs.ListQuery{})
	require.NoError(t, err)
	require.Empty(t, n, "no refused request left a job")
}

// TestVideoI2V: an I2V job from the upload route completes; its JSON never echoes the image.
func TestVideoI2V(t *testing.T) {
	e := newVideoEnv(t, catalogue.RunnerWan22I2VDistill, time.Millisecond, nil)
	e.srv.video.runner.encode = func(_ context.Context, path string, f video.Frames, _ video.Options) error {
		return os.WriteFile(path, []byte("mp4"), 0o600)
	}
	body, ct := uploadBody(t, "image/png", videoPNG(t), map[string]string{"prompt": "x", "frame_pos": "40", "num_inference_steps": "20"})
	w := do(e.h, http.MethodPost, "/v1/videos/generations/i2v/upload", ct, videoAuth, body)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	var job pythonJob
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &job))
	require.Equal(t, 4, job.Params.Steps, "Distill always runs 4 steps")
	require.Equal(t, []int{40}, job.Params.FramePositions)
	require.NotContains(t, w.Body.String(), "iVBOR", "no image payload in the job")
	require.Equal(t, jobs.Completed, e.wait(t))
}
