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
// device time in_progress → completed (both to within one poll interval), and a job that ends
// failed or cancelled is an error "job:<status>".
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
	var running time.Time
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		status, err := jobStatus(ctx, cfg, u)
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
		switch status {
		case "completed":
			s.latency = now.Sub(start)
			s.deviceMs, s.hasDevice = float64(now.Sub(running))/float64(time.Millisecond), true
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

// jobStatus reads a job's status.
func jobStatus(ctx context.Context, cfg *Config, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	for k, vs := range cfg.Header {
		req.Header[k] = vs
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %.200s", u, resp.StatusCode, body)
	}
	var j struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &j); err != nil || j.Status == "" {
		return "", fmt.Errorf("GET %s: no job status in %.200s", u, body)
	}
	return j.Status, nil
}
