package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/pgtest"
	"github.com/tenstorrent/tt-media-server-go/media/video"
)

// needFFmpeg: the video service refuses to start without ffmpeg; .ci/run installs it.
func needFFmpeg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ffprobe"); err != nil || video.Check(context.Background()) != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ffmpeg/ffprobe with libx264 are missing; .ci/run installs Debian's ffmpeg")
		}
		t.Skip("ffmpeg/ffprobe with libx264 are missing (Debian ffmpeg); skipping")
	}
}

func videoServerEnv(dir string, extra map[string]string) map[string]string {
	env := map[string]string{"MODEL_RUNNER": "tt-wan2.2", "DEVICE_IDS": "(0)", "MOCK_VIDEO_SCALE": "8",
		"MOCK_STEP_SECONDS": "0.05", "TT_VIDEO_OUTPUT_DIR": filepath.Join(dir, "out"),
		"JOB_DATABASE_PATH": filepath.Join(dir, "jobs.db"), "JOB_REPLICA_ID": "r1", "CANARY_ENABLED": "false"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// job reads a HEAD-dialect job.
func (s *server) job(t *testing.T, id string) map[string]any {
	t.Helper()
	r := s.get(t, "/v1/videos/generations/"+id, "Authorization", bearer)
	require.Equal(t, http.StatusOK, r.Status, r.String())
	return r.obj(t)
}

// waitJob polls a job until cond holds (the job's own state is the event waited on).
func (s *server) waitJob(t *testing.T, id string, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := s.job(t, id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %s did not happen in 60 s; last %v", id, what, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func status(want string) func(map[string]any) bool {
	return func(j map[string]any) bool { return j["status"] == want }
}

func (s *server) submitVideo(t *testing.T, body string) string {
	t.Helper()
	r := s.postJSON(t, "/v1/videos/generations", body)
	require.Equal(t, http.StatusAccepted, r.Status, r.String())
	return r.obj(t)["id"].(string)
}

// TestVideoKillRestart: kill -9 of the server with a job completed, one running and one
// queued; after the restart the completed job still downloads, the other two are failed with
// code "interrupted", and no file is orphaned (the documented behaviour).
func TestVideoKillRestart(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	env := videoServerEnv(dir, nil)
	s := launch(t, env)
	s.waitReady(t, 20*time.Second)
	done := s.submitVideo(t, `{"prompt":"done before the crash","num_inference_steps":4}`)
	s.waitJob(t, done, "completion", status("completed"))
	before := s.get(t, "/v1/videos/generations/"+done+"/download", "Authorization", bearer)
	require.Equal(t, http.StatusOK, before.Status)
	running := s.submitVideo(t, `{"prompt":"running at the crash","num_inference_steps":50}`)
	s.waitJob(t, running, "a device taking it", func(j map[string]any) bool { return j["status"] == "in_progress" })
	queued := s.submitVideo(t, `{"prompt":"queued at the crash","num_inference_steps":4}`)
	require.Equal(t, "queued", s.job(t, queued)["status"])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "video_orphan.mp4"), []byte("x"), 0o600))

	require.NoError(t, s.cmd.Process.Kill()) // kill -9
	<-s.done

	s2 := startServer(t, env)
	for id, want := range map[string]string{done: "completed", running: "failed", queued: "failed"} {
		j := s2.job(t, id)
		require.Equal(t, want, j["status"], id)
		if want == "failed" {
			require.Equal(t, "interrupted", j["error"].(map[string]any)["code"], id)
		}
	}
	after := s2.get(t, "/v1/videos/generations/"+done+"/download", "Authorization", bearer)
	require.Equal(t, http.StatusOK, after.Status)
	require.True(t, bytes.Equal(before.Body, after.Body))
	entries, err := os.ReadDir(filepath.Join(dir, "out"))
	require.NoError(t, err)
	for _, e := range entries {
		require.True(t, strings.HasPrefix(e.Name(), done+"."), "only the completed job's files remain, found %s", e.Name())
	}
	r := s2.get(t, "/v1/videos/generations/"+running+"/download", "Authorization", bearer)
	require.Equal(t, http.StatusConflict, r.Status, r.String())
}

// TestVideoReplicasPostgres: two servers share one PostgreSQL database and one result
// directory: a job submitted to A is polled and downloaded from B; a job running on A is
// cancelled from B and A's device is free again; with the database gone, readiness is false.
func TestVideoReplicasPostgres(t *testing.T) {
	needFFmpeg(t)
	pg := pgtest.Start(t)
	dir := t.TempDir()
	common := map[string]string{"JOB_DATABASE_URL": pg.URL}
	a := startServer(t, videoServerEnv(dir, map[string]string{"JOB_DATABASE_URL": pg.URL, "JOB_REPLICA_ID": "a"}))
	b := startServer(t, videoServerEnv(dir, map[string]string{"JOB_DATABASE_URL": common["JOB_DATABASE_URL"], "JOB_REPLICA_ID": "b",
		"JOB_MAX_STUCK_TIME_SECONDS": "4"}))

	r := do(t, http.MethodPost, a.URL+"/v1/videos", []byte(`{"prompt":"shared","model":"tt-wan2.2"}`),
		"Content-Type", "application/json", "Authorization", bearer)
	require.Equal(t, http.StatusOK, r.Status, r.String())
	id := r.obj(t)["id"].(string)
	b.waitJob(t, id, "completion seen from B", status("completed"))
	content := b.get(t, "/v1/videos/"+id+"/content", "Authorization", bearer)
	require.Equal(t, http.StatusOK, content.Status, content.String())
	path := filepath.Join(t.TempDir(), "b.mp4")
	require.NoError(t, os.WriteFile(path, content.Body, 0o600))
	info, err := video.Probe(context.Background(), path)
	require.NoError(t, err)
	require.Equal(t, 81, info.Frames)

	// Cancel on B a job that runs on A: A stops it (at its heartbeat) and serves the next.
	long := a.submitVideo(t, `{"prompt":"long","num_inference_steps":50}`)
	b.waitJob(t, long, "running on A", func(j map[string]any) bool { return j["status"] == "in_progress" })
	c := b.postJSON(t, "/v1/videos/generations/"+long+"/cancel", "")
	require.Equal(t, http.StatusOK, c.Status, c.String())
	next := a.submitVideo(t, `{"prompt":"next","num_inference_steps":4}`)
	a.waitJob(t, next, "the next job completing on A", status("completed"))
	var list []map[string]any
	lr := b.get(t, "/v1/videos/jobs", "Authorization", bearer)
	require.NoError(t, json.Unmarshal(lr.Body, &list))
	require.Len(t, list, 3)

	pg.Stop(t) // the database goes away: not ready, no job lost (they are in the database)
	h := b.get(t, "/health")
	require.Equal(t, http.StatusServiceUnavailable, h.Status, h.String())
}
