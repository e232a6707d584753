package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// KindVideo posts HEAD's {"prompt", "num_inference_steps"} to /v1/videos/generations and
// follows the job it answers (202) by polling GET <path>/<id> until it ends: a sample's latency
// is submit → completed, its queue wait submit → first seen in_progress (a device took it), its
// device time in_progress → first seen with progress >= 99 (the device told its last denoising
// step), and its finish time that moment → completed (the clip's decode on the device, then the
// MP4 encode, thumbnail and spritesheet off the device); all to within one poll interval. A job
// no poll saw between its last step and completed has device time in_progress → completed and
// no finish time. A job that ends failed or cancelled is an error "job:<status>".
const KindVideo Kind = "video"

// defaultPoll is the job poll interval when the spec gives none.
const defaultPoll = 50 * time.Millisecond

// videoBody is request i of a video workload.
func videoBody(spec WorkloadSpec) func(i int) []byte {
	return func(i int) []byte {
		req := map[string]any{"prompt": "tt-media-bench job " + strconv.Itoa(i) + ": waves breaking on a rocky shore"}
		if spec.Steps > 0 {
			req["num_inference_steps"] = spec.Steps
		}
		b, _ := json.Marshal(req) // strings and numbers: cannot fail
		return b
	}
}

// followJob polls the job a 202 answer named until it ends, filling s.
func followJob(ctx context.Context, cfg *Config, submitted []byte, start time.Time, s *sample) {
	var job struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(submitted, &job); err != nil || job.ID == "" {
		s.errKind, s.errMsg = "job:no_id", fmt.Sprintf("the 202 answer names no job id: %.200s", submitted)
		return
	}
	poll := cfg.Workload.Spec.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	u := cfg.BaseURL.JoinPath(cfg.Workload.Path, job.ID).String()
	var running, stepsDone time.Time
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		status, progress, err := jobStatus(ctx, cfg, u)
		now := time.Now()
		if err != nil {
			s.latency = now.Sub(start)
			s.errKind, s.errMsg = classify(err), err.Error()
			return
		}
		if status != "queued" && running.IsZero() {
			running = now
			s.queueMs, s.hasQueue = float64(now.Sub(start))/float64(time.Millisecond), true
		}
		if status == "in_progress" && progress >= lastStepProgress && stepsDone.IsZero() {
			stepsDone = now
		}
		switch status {
		case "completed":
			s.latency = now.Sub(start)
			if stepsDone.IsZero() {
				s.deviceMs = float64(now.Sub(running)) / float64(time.Millisecond)
			} else {
				s.deviceMs = float64(stepsDone.Sub(running)) / float64(time.Millisecond)
				s.finishMs, s.hasFinish = float64(now.Sub(stepsDone))/float64(time.Millisecond), true
			}
			s.hasDevice = true
			s.units = 1
			return
		case "failed", "cancelled":
			s.latency = now.Sub(start)
			s.errKind, s.errMsg = "job:"+status, "job "+job.ID+" ended "+status
			return
		}
		select {
		case <-ctx.Done():
			s.latency = time.Since(start)
			s.errKind, s.errMsg = classify(ctx.Err()), ctx.Err().Error()
			return
		case <-t.C:
		}
	}
}

// lastStepProgress is the progress the server reports once the device has told its last
// denoising step (steps done × 99 ÷ steps; 100 only when the MP4 is stored).
const lastStepProgress = 99

// jobStatus reads a job's status and progress (0-100).
func jobStatus(ctx context.Context, cfg *Config, u string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, err
	}
	for k, vs := range cfg.Header {
		req.Header[k] = vs
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("GET %s: %d %.200s", u, resp.StatusCode, body)
	}
	var j struct {
		Status   string `json:"status"`
		Progress int    `json:"progress"`
	}
	if err := json.Unmarshal(body, &j); err != nil || j.Status == "" {
		return "", 0, fmt.Errorf("GET %s: no job status in %.200s", u, body)
	}
	return j.Status, j.Progress, nil
}
