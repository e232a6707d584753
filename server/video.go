package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/media/video"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// maxVideoBody caps a video request body: HEAD's I2V JSON carries base64 images of up to
// 10 MB each.
const maxVideoBody = 64 << 20

// videoService is the video routes' state: the durable jobs and this replica's job runner.
type videoService struct {
	store  jobs.Store
	files  *jobs.Files
	runner *videoRunner
	cancel context.CancelFunc
}

// newVideoService starts the video job runner over the pool's scheduler.
func (s *Server) newVideoService(vj *VideoJobs) *videoService {
	p := s.pool(runners.ServiceVideo)
	o := video.Options{CRF: s.cfg.Video.CRF, Preset: s.cfg.Video.Preset, Timeout: s.cfg.Video.EncodeTimeout}
	if o.Preset == "" { // hand-built settings
		o = video.DefaultOptions
	}
	owner := s.cfg.Video.ReplicaID
	if owner == "" {
		owner = "replica"
	}
	vr := &videoRunner{store: vj.Store, files: vj.Files, sched: p.Sched, owner: owner, opts: o, log: s.log,
		encode: video.EncodeMP4, running: map[string]context.CancelFunc{}}
	if m, ok := runners.Lookup(p.Runner, s.cfg); ok && m.Video != nil {
		vr.wantAudio = m.Video.Audio != nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	interval := min(max(s.cfg.Video.MaxStuck/4, time.Second), 30*time.Second)
	go vr.watch(ctx, interval)
	return &videoService{store: vj.Store, files: vj.Files, runner: vr, cancel: cancel}
}

// CloseVideo stops the video job runner: running jobs are cancelled and failed as
// interrupted. cmd calls it at shutdown.
func (s *Server) CloseVideo() {
	if s.video == nil {
		return
	}
	s.video.cancel()
	s.video.runner.shutdown()
}

// videoRoutes mounts HEAD's video routes (under /v1/videos, and /video as deprecated twins)
// and OpenAI's /v1/videos.
func (s *Server) videoRoutes(r *gin.Engine, authed gin.HandlerFunc) {
	limited := s.rateLimit(dialectPython)
	body := s.limitBody(maxVideoBody, dialectPython)
	for _, base := range []string{"/v1/videos", "/video"} {
		var dep []gin.HandlerFunc
		if base == "/video" {
			dep = []gin.HandlerFunc{deprecated("/v1/videos/generations")}
		}
		h := func(hs ...gin.HandlerFunc) []gin.HandlerFunc {
			return append(append(append([]gin.HandlerFunc{}, dep...), authed), hs...)
		}
		r.POST(base+"/generations", h(limited, body, s.handleVideoGenerate(false))...)
		r.POST(base+"/generations/i2v", h(limited, body, s.handleVideoGenerate(true))...)
		r.POST(base+"/generations/i2v/upload", h(limited, s.limitBody(maxVideoUploadBody(s), dialectPython), s.handleVideoUpload)...)
		r.GET(base+"/generations/:id", h(s.handleVideoJob)...)
		r.GET(base+"/jobs", h(s.handleVideoJobs)...)
		r.GET(base+"/generations/:id/download", h(s.handleVideoDownload)...)
		r.POST(base+"/generations/:id/cancel", h(s.handleVideoCancel)...)
	}
	// OpenAI's routes answer a missing or wrong key in OpenAI's envelope (invalid_api_key).
	oa, oaAuth := s.rateLimit(dialectOpenAI), s.openaiAuth()
	r.POST("/v1/videos", oaAuth, oa, s.limitBody(maxVideoBody, dialectOpenAI), s.handleOpenAIVideoCreate)
	r.GET("/v1/videos", oaAuth, s.handleOpenAIVideoList)
	r.GET("/v1/videos/:id", oaAuth, s.handleOpenAIVideoGet)
	r.GET("/v1/videos/:id/content", oaAuth, s.handleOpenAIVideoContent)
	r.DELETE("/v1/videos/:id", oaAuth, s.handleOpenAIVideoDelete)
	r.POST("/v1/videos/:id/:verb", oaAuth, s.handleOpenAIVideoVerb)
}

func maxVideoUploadBody(s *Server) int64 { return s.cfg.Video.MaxImageBytes + 1<<20 }

// pythonJob is HEAD's Job.to_public_dict, with progress.
type pythonJob struct {
	ID          string         `json:"id"`
	JobType     string         `json:"job_type"`
	Status      string         `json:"status"`
	CreatedAt   int64          `json:"created_at"`
	Model       string         `json:"model"`
	Params      videoParams    `json:"request_parameters"`
	Progress    int            `json:"progress"`
	CompletedAt int64          `json:"completed_at,omitempty"`
	Error       *jobErrorValue `json:"error,omitempty"`
}

type jobErrorValue struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func pythonJobOf(j jobs.Job) pythonJob {
	out := pythonJob{ID: j.ID, JobType: j.Kind, Status: string(j.Status), CreatedAt: j.CreatedAt.Unix(), Model: j.Model,
		Params: paramsOf(j), Progress: j.Progress}
	if !j.CompletedAt.IsZero() {
		out.CompletedAt = j.CompletedAt.Unix()
	}
	if j.ErrorCode != "" {
		out.Error = &jobErrorValue{Code: j.ErrorCode, Message: j.ErrorMsg}
	}
	return out
}

// submitVideo stores and starts a job; in synchronous mode (USE_ASYNC_VIDEO=false) it waits
// for it and answers the MP4 itself.
func (s *Server) submitVideo(c *gin.Context, d dialect, req *runners.VideoRequest, p videoParams) (jobs.Job, bool) {
	if !s.pool(runners.ServiceVideo).Sched.Ready() {
		s.fail(c, d, httpErr(http.StatusServiceUnavailable, "Model is not ready"))
		return jobs.Job{}, false
	}
	params, _ := json.Marshal(p)
	client, _ := clientFrom(c)
	job := &jobs.Job{ID: jobs.NewID(videoIDPrefix), Kind: "video", Model: s.pool(runners.ServiceVideo).Runner,
		Owner: s.video.runner.owner, Client: client, Params: params}
	if err := s.video.runner.start(c.Request.Context(), job, req, s.cfg.Video.MaxJobs); err != nil {
		s.fail(c, d, jobErr(err))
		return jobs.Job{}, false
	}
	// The answer is the job as it was accepted (queued), as HEAD answers: reading it back from
	// the store could already find it in_progress, since the device may take it at once.
	return *job, true
}

// jobErr maps the job store's errors to answers.
func jobErr(err error) error {
	switch {
	case errors.Is(err, jobs.ErrTooMany):
		return &apiError{status: http.StatusTooManyRequests, msg: err.Error() + "; delete finished jobs or wait for their retention to end", retryAfter: 30 * time.Second}
	case errors.Is(err, jobs.ErrNotFound):
		return httpErr(http.StatusNotFound, "Video job not found")
	case errors.Is(err, jobs.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, msg: err.Error(), retryAfter: 5 * time.Second}
	}
	return err
}

func (s *Server) handleVideoGenerate(i2v bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		data, err := io.ReadAll(c.Request.Body)
		if err != nil {
			s.fail(c, dialectPython, bodyErr(err))
			return
		}
		in, err := parsePythonVideo(data, i2v)
		if err != nil {
			s.fail(c, dialectPython, err)
			return
		}
		s.generatePython(c, in)
	}
}

func (s *Server) generatePython(c *gin.Context, in *videoInput) {
	req, p, err := s.videoRequest(in, dialectPython)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	start := time.Now()
	j, ok := s.submitVideo(c, dialectPython, req, p)
	if !ok {
		return
	}
	if s.cfg.Video.Async || s.cfg.Video.Preset == "" {
		writeJSON(c, http.StatusAccepted, pythonJobOf(j))
		return
	}
	// Synchronous mode: wait for the job, answer its MP4.
	st, err := s.awaitVideo(c.Request.Context(), j.ID)
	if err != nil {
		s.video.runner.stop(j.ID)
		_, _ = s.video.store.Cancel(context.WithoutCancel(c.Request.Context()), j.ID)
		s.fail(c, dialectPython, err)
		return
	}
	if st.Status != jobs.Completed {
		s.fail(c, dialectPython, httpErr(http.StatusInternalServerError, "Video generation failed: %s", st.ErrorMsg))
		return
	}
	c.Header("X-Generation-Time", strconv.FormatFloat(time.Since(start).Seconds(), 'f', 2, 64))
	s.serveVideoFile(c, dialectPython, st, "mp4")
}

// awaitVideo waits for a job to finish (synchronous mode), watching the store.
func (s *Server) awaitVideo(ctx context.Context, id string) (jobs.Job, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		j, err := s.video.store.Get(ctx, id)
		if err != nil {
			return j, jobErr(err)
		}
		if j.Status.Terminal() {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-t.C:
		}
	}
}

// allowedUploadTypes are HEAD's _ALLOWED_IMAGE_CONTENT_TYPES.
var allowedUploadTypes = []string{"image/png", "image/jpeg", "image/webp"}

// handleVideoUpload is HEAD's /generations/i2v/upload: multipart prompt, image (png, jpeg,
// webp: else 415; over MAX_VIDEO_IMAGE_BYTES: 413; undecodable: 422), frame_pos,
// num_inference_steps, seed, negative_prompt.
func (s *Server) handleVideoUpload(c *gin.Context) {
	if err := c.Request.ParseMultipartForm(8 << 20); err != nil {
		if strings.Contains(err.Error(), "too large") {
			s.fail(c, dialectPython, httpErr(http.StatusRequestEntityTooLarge, "Image exceeds %d-byte upload cap", s.cfg.Video.MaxImageBytes))
			return
		}
		s.fail(c, dialectPython, httpErr(http.StatusUnprocessableEntity, "a multipart/form-data body is required: %v", err))
		return
	}
	form := c.Request.MultipartForm
	defer func() { _ = form.RemoveAll() }()
	known := map[string]bool{"prompt": true, "image": true, "frame_pos": true, "num_inference_steps": true, "seed": true, "negative_prompt": true}
	for k := range form.Value {
		if !known[k] {
			s.fail(c, dialectPython, httpErr(http.StatusUnprocessableEntity, "%s: unknown field; this route reads %s", k, "prompt, image, frame_pos, num_inference_steps, seed, negative_prompt"))
			return
		}
	}
	files := form.File["image"]
	if len(files) != 1 {
		s.fail(c, dialectPython, httpErr(http.StatusUnprocessableEntity, "image: exactly one image file is required"))
		return
	}
	fh := files[0]
	if ct := fh.Header.Get("Content-Type"); !containsStr(allowedUploadTypes, ct) {
		s.fail(c, dialectPython, httpErr(http.StatusUnsupportedMediaType, "Unsupported image content_type %q; allowed: %v", ct, allowedUploadTypes))
		return
	}
	if fh.Size > s.cfg.Video.MaxImageBytes {
		s.fail(c, dialectPython, httpErr(http.StatusRequestEntityTooLarge, "Image exceeds %d-byte upload cap", s.cfg.Video.MaxImageBytes))
		return
	}
	f, err := fh.Open()
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	img, err := io.ReadAll(io.LimitReader(f, s.cfg.Video.MaxImageBytes+1))
	_ = f.Close()
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	in := &videoInput{i2vRoute: true}
	one := func(name string) (string, bool, error) {
		vs := form.Value[name]
		switch len(vs) {
		case 0:
			return "", false, nil
		case 1:
			return vs[0], true, nil
		}
		return "", false, httpErr(http.StatusBadRequest, "%s: sent %d times; send it once", name, len(vs))
	}
	v, ok, err := one("prompt")
	if err == nil && !ok {
		err = httpErr(http.StatusUnprocessableEntity, "prompt: Field required")
	}
	in.prompt = v
	pos := int64(0)
	for _, f := range []struct {
		name string
		dst  **int64
	}{{"num_inference_steps", &in.steps}, {"seed", &in.seed}} {
		v, ok, e := one(f.name)
		if err == nil && e != nil {
			err = e
		}
		if ok && err == nil {
			n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if perr != nil {
				err = httpErr(http.StatusUnprocessableEntity, "%s: Input should be a valid integer, got %q", f.name, v)
			}
			*f.dst = &n
		}
	}
	if v, ok, e := one("frame_pos"); e != nil && err == nil {
		err = e
	} else if ok && err == nil {
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if perr != nil {
			err = httpErr(http.StatusUnprocessableEntity, "frame_pos: Input should be a valid integer, got %q", v)
		}
		pos = n
	}
	if v, ok, e := one("negative_prompt"); e != nil && err == nil {
		err = e
	} else if ok {
		in.negative = v
	}
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	if in.steps == nil {
		twelve := int64(12) // HEAD's upload default
		in.steps = &twelve
	}
	in.images = []videoImageIn{{data: img, framePos: pos, field: "image"}}
	s.generatePython(c, in)
}

func containsStr(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Server) handleVideoJob(c *gin.Context) {
	j, err := s.video.store.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.fail(c, dialectPython, jobErr(err))
		return
	}
	writeJSON(c, http.StatusOK, pythonJobOf(j))
}

func (s *Server) handleVideoJobs(c *gin.Context) {
	list, _, err := s.video.store.List(c.Request.Context(), jobs.ListQuery{Kind: "video"})
	if err != nil {
		s.fail(c, dialectPython, jobErr(err))
		return
	}
	out := make([]pythonJob, 0, len(list))
	for _, j := range list {
		out = append(out, pythonJobOf(j))
	}
	writeJSON(c, http.StatusOK, out)
}

func (s *Server) handleVideoDownload(c *gin.Context) {
	j, err := s.video.store.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.fail(c, dialectPython, jobErr(err))
		return
	}
	s.serveVideoFile(c, dialectPython, j, "mp4")
}

// serveVideoFile answers a completed job's file variant with Range support; a job that is
// not completed is a 409 naming its state.
func (s *Server) serveVideoFile(c *gin.Context, d dialect, j jobs.Job, variant string) {
	if j.Status != jobs.Completed {
		s.fail(c, d, &apiError{status: http.StatusConflict, code: "video_not_ready",
			msg: fmt.Sprintf("Video content not available: job %s is %s", j.ID, j.Status)})
		return
	}
	name := jobs.Name(j.ID, variant)
	f, err := os.Open(s.video.files.Path(name))
	if err != nil {
		s.fail(c, d, httpErr(http.StatusNotFound, "Video content not available: %s is missing from TT_VIDEO_OUTPUT_DIR", name))
		return
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		s.fail(c, d, err)
		return
	}
	ct := "video/mp4"
	if strings.HasSuffix(variant, ".webp") {
		ct = "image/webp"
	}
	c.Header("Content-Type", ct)
	c.Header("Content-Disposition", "attachment; filename="+name)
	http.ServeContent(c.Writer, c.Request, name, st.ModTime(), f)
}

func (s *Server) handleVideoCancel(c *gin.Context) {
	id := c.Param("id")
	j, err := s.video.store.Cancel(c.Request.Context(), id)
	if errors.Is(err, jobs.ErrTerminal) {
		s.fail(c, dialectPython, &apiError{status: http.StatusConflict, msg: fmt.Sprintf("Video job %s is already %s", id, j.Status)})
		return
	}
	if err != nil {
		s.fail(c, dialectPython, jobErr(err))
		return
	}
	s.video.runner.stop(id) // a queued job leaves the queue; a running one stops at its next step
	writeJSON(c, http.StatusOK, pythonJobOf(j))
}

// videoReady: the job database answers (PostgreSQL may be away); true without a video pool.
func (s *Server) videoReady() bool {
	if s.video == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.video.store.Ping(ctx) == nil
}
