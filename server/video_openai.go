package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/jobs"
)

// openAIVideo is OpenAI's Video object.
type openAIVideo struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	CompletedAt        *int64          `json:"completed_at"`
	ExpiresAt          *int64          `json:"expires_at"`
	Error              *jobErrorValue  `json:"error"`
	Model              string          `json:"model"`
	Progress           int             `json:"progress"`
	Prompt             string          `json:"prompt"`
	RemixedFromVideoID *string         `json:"remixed_from_video_id"`
	Seconds            string          `json:"seconds"`
	Size               string          `json:"size"`
	Status             string          `json:"status"`
	Seed               int64           `json:"seed"`
	Parameters         videoParamsView `json:"tt_parameters"`
}

// videoParamsView is what the OpenAI object adds of HEAD's parameters (the seed drawn, steps).
type videoParamsView struct {
	Steps          int   `json:"num_inference_steps"`
	SeedGenerated  bool  `json:"seed_generated"`
	FramePositions []int `json:"image_frame_positions,omitempty"`
	Frames         int   `json:"num_frames"`
	FPS            int   `json:"fps"`
}

func (s *Server) openAIVideoOf(j jobs.Job) openAIVideo {
	p := paramsOf(j)
	v := openAIVideo{ID: j.ID, Object: "video", CreatedAt: j.CreatedAt.Unix(), Model: j.Model, Progress: j.Progress,
		Prompt: p.Prompt, Seconds: p.Seconds, Size: p.Size, Status: string(j.Status), Seed: p.Seed,
		Parameters: videoParamsView{Steps: p.Steps, SeedGenerated: p.SeedGenerated, FramePositions: p.FramePositions, Frames: p.Frames, FPS: p.FPS}}
	if !j.CompletedAt.IsZero() {
		done := j.CompletedAt.Unix()
		exp := j.CompletedAt.Add(s.cfg.Video.Retention).Unix()
		v.CompletedAt, v.ExpiresAt = &done, &exp
	}
	if j.Status == jobs.Cancelled { // OpenAI's states have no cancelled: a failed job saying why
		v.Status = string(jobs.Failed)
		v.Error = &jobErrorValue{Code: "cancelled", Message: "the job was cancelled"}
	}
	if j.ErrorCode != "" {
		v.Error = &jobErrorValue{Code: j.ErrorCode, Message: j.ErrorMsg}
	}
	return v
}

func (s *Server) pollHint(c *gin.Context) {
	c.Header("openai-poll-after-ms", strconv.FormatInt(s.cfg.Video.PollAfter.Milliseconds(), 10))
}

// openAIVideoParams is VideoCreateParams as a JSON body, declared (decodeOpenAI): its fields are
// also the parts a multipart body may carry, where input_reference is the image file.
type openAIVideoParams struct {
	Prompt  string `json:"prompt" msg.type:"prompt must be a string"`
	Model   string `json:"model" msg.type:"model must be a string"`
	Seconds string `json:"seconds" msg.type:"seconds must be a string"`
	Size    string `json:"size" msg.type:"size must be a string"`
	// input_reference is an image: it comes only as a multipart file (any JSON value, null too,
	// is refused).
	InputReference json.RawMessage `json:"input_reference" validate:"isdefault" msg:"input_reference is an image file: send the request as multipart/form-data"`
}

// unknownVideoParam is the 400 for a field VideoCreateParams does not have.
func unknownVideoParam(name string) error {
	return invalidParam(name, "unknown parameter %q; POST /v1/videos reads %s", name,
		strings.Join(declaredNames(reflect.TypeFor[openAIVideoParams]()), ", "))
}

// openAIVideoForm is VideoCreateParams as a multipart form, declared (decodeOpenAIForm): the
// JSON body's fields, input_reference an image file.
type openAIVideoForm struct {
	_              struct{} `msg.unknown:"unknown parameter %q; POST /v1/videos reads prompt, model, seconds, size, input_reference" msg.duplicate:"%s sent twice; send it once"`
	Prompt         string   `json:"prompt"`
	Model          string   `json:"model"`
	Seconds        string   `json:"seconds"`
	Size           string   `json:"size"`
	InputReference []byte   `json:"input_reference" form:",file"`
}

// handleOpenAIVideoCreate is POST /v1/videos: JSON or multipart (input_reference, an image,
// conditions frame 0 on I2V models).
func (s *Server) handleOpenAIVideoCreate(c *gin.Context) {
	const d = dialectOpenAI
	body, err := readRequest(c.Request)
	if err != nil {
		s.fail(c, d, err)
		return
	}
	in := &videoInput{}
	model := ""
	var fields map[string]string
	switch ct := body.contentType; ct {
	case "multipart/form-data":
		// Every part is bounded by MAX_VIDEO_IMAGE_BYTES: the image (413 past it) and the text
		// fields (400 past it).
		var f openAIVideoForm
		lim := formLimits{fieldBytes: int(s.cfg.Video.MaxImageBytes), fileBytes: s.cfg.Video.MaxImageBytes}
		if err := decodeOpenAIForm(body, c.GetHeader("Content-Type"), lim, &f); err != nil {
			s.fail(c, d, err)
			return
		}
		if f.InputReference != nil {
			in.images = append(in.images, videoImageIn{data: f.InputReference, field: "input_reference"})
		}
		fields = map[string]string{"prompt": f.Prompt, "model": f.Model, "seconds": f.Seconds, "size": f.Size}
	case "application/json", "":
		b, err := parseBody(body.data)
		if err != nil {
			s.fail(c, d, err)
			return
		}
		if k, ok := undeclared(b.raw, reflect.TypeFor[openAIVideoParams]()); ok {
			s.fail(c, d, unknownVideoParam(k))
			return
		}
		var p openAIVideoParams
		if err := decodeOpenAI(body.data, &p); err != nil {
			s.fail(c, d, err)
			return
		}
		fields = map[string]string{"prompt": p.Prompt, "model": p.Model, "seconds": p.Seconds, "size": p.Size}
	default:
		// OpenAI answers an unreadable body 400 (the SDKs' BadRequestError), not 415.
		s.fail(c, d, invalidParam("", "Content-Type must be application/json or multipart/form-data, got %q", ct))
		return
	}
	in.prompt, model, in.seconds, in.size = fields["prompt"], fields["model"], fields["seconds"], fields["size"]
	if model != "" && !s.servesVideoModel(model) {
		s.fail(c, d, &apiError{status: http.StatusNotFound, param: "model", code: "model_not_found",
			msg: fmt.Sprintf("model %q is not served here; this deployment serves %s", model, s.pool("video").Runner)})
		return
	}
	req, p, err := s.videoRequest(in, d)
	if err != nil {
		s.fail(c, d, err)
		return
	}
	j, ok := s.submitVideo(c, d, req, p)
	if !ok {
		return
	}
	writeJSON(c, http.StatusOK, s.openAIVideoOf(j))
}

// servesVideoModel: model names the video pool's runner, SERVED_MODEL_NAME or MODEL.
func (s *Server) servesVideoModel(model string) bool {
	return model == s.pool("video").Runner || (s.cfg.ServedModelName != "" && model == s.cfg.ServedModelName) ||
		(s.cfg.Model != "" && model == s.cfg.Model)
}

func (s *Server) handleOpenAIVideoGet(c *gin.Context) {
	j, err := s.video.store.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.fail(c, dialectOpenAI, openAIJobErr(err))
		return
	}
	s.pollHint(c)
	writeJSON(c, http.StatusOK, s.openAIVideoOf(j))
}

func openAIJobErr(err error) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return &apiError{status: http.StatusNotFound, msg: "Video not found", code: "video_not_found"}
	}
	return jobErr(err)
}

// handleOpenAIVideoList is GET /v1/videos: limit (1-100, default 20), order (asc|desc, default
// desc), after (a video id).
func (s *Server) handleOpenAIVideoList(c *gin.Context) {
	const d = dialectOpenAI
	q := jobs.ListQuery{Kind: "video", Limit: 20, Desc: true}
	for k, vs := range c.Request.URL.Query() {
		v := vs[0]
		switch k {
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				s.fail(c, d, invalidParam("limit", "limit must be an integer 1-100, got %q", v))
				return
			}
			q.Limit = n
		case "order":
			if v != "asc" && v != "desc" {
				s.fail(c, d, invalidParam("order", "order must be asc or desc, got %q", v))
				return
			}
			q.Desc = v == "desc"
		case "after":
			q.After = v
		default:
			s.fail(c, d, invalidParam(k, "unknown query parameter %q; GET /v1/videos reads limit, order, after", k))
			return
		}
	}
	list, more, err := s.video.store.List(c.Request.Context(), q)
	if errors.Is(err, jobs.ErrNotFound) {
		s.fail(c, d, invalidParam("after", "after=%q names no video", q.After))
		return
	}
	if err != nil {
		s.fail(c, d, jobErr(err))
		return
	}
	data := make([]openAIVideo, 0, len(list))
	for _, j := range list {
		data = append(data, s.openAIVideoOf(j))
	}
	out := gin.H{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		out["first_id"], out["last_id"] = data[0].ID, data[len(data)-1].ID
	}
	s.pollHint(c)
	writeJSON(c, http.StatusOK, out)
}

// handleOpenAIVideoContent is GET /v1/videos/{id}/content?variant=video|thumbnail|spritesheet.
func (s *Server) handleOpenAIVideoContent(c *gin.Context) {
	const d = dialectOpenAI
	variant := "mp4"
	for k, vs := range c.Request.URL.Query() {
		if k != "variant" {
			s.fail(c, d, invalidParam(k, "unknown query parameter %q; the content route reads variant", k))
			return
		}
		switch vs[0] {
		case "video":
		case "thumbnail":
			variant = "thumbnail.webp"
		case "spritesheet":
			variant = "spritesheet.webp"
		default:
			s.fail(c, d, invalidParam("variant", "variant must be video, thumbnail or spritesheet, got %q", vs[0]))
			return
		}
	}
	j, err := s.video.store.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.fail(c, d, openAIJobErr(err))
		return
	}
	s.serveVideoFile(c, d, j, variant)
}

// handleOpenAIVideoDelete is DELETE /v1/videos/{id}: the job (stopped first if it runs) and
// its files go.
func (s *Server) handleOpenAIVideoDelete(c *gin.Context) {
	id := c.Param("id")
	j, err := s.video.store.Delete(c.Request.Context(), id)
	if err != nil {
		s.fail(c, dialectOpenAI, openAIJobErr(err))
		return
	}
	s.video.runner.stop(id)
	if err := s.video.files.Remove(j.ID); err != nil {
		s.log.Warn("deleted video's files not removed", "job", id, "err", err)
	}
	writeJSON(c, http.StatusOK, gin.H{"id": j.ID, "object": "video.deleted", "deleted": true})
}

// handleOpenAIVideoVerb refuses the video verbs this server does not serve (remix, extend,
// ...), naming them.
func (s *Server) handleOpenAIVideoVerb(c *gin.Context) {
	verb := c.Param("verb")
	s.fail(c, dialectOpenAI, &apiError{status: http.StatusBadRequest, param: verb, code: "unsupported_operation",
		msg: fmt.Sprintf("POST /v1/videos/{id}/%s is not supported by this server (it serves create, list, retrieve, content and delete)", verb)})
}
