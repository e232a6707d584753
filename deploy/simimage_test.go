package deploy

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sim image's server is built as its Dockerfile stage builds it — with cgo, so its devices
// are the C simulator behind the device bridge's C ABI, not the no-cgo twin that fails every
// device call — and it must run on debian:bookworm-slim, whose glibc (libc, libm, the loader),
// libgcc and libstdc++ are all it may need beyond the packages the image installs.
func TestSimImageBinaryRunsOnDebianSlim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server")
	}
	bin := filepath.Join(t.TempDir(), "tt-media-server")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/tt-media-server")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Contains(t, libs, "libc.so.6", "a cgo build (the C simulator) links glibc")
	slim := map[string]bool{"libc.so.6": true, "libm.so.6": true, "libpthread.so.0": true, "libdl.so.2": true,
		"librt.so.1": true, "ld-linux-x86-64.so.2": true, "ld-linux-aarch64.so.1": true, "libgcc_s.so.1": true, "libstdc++.so.6": true}
	for _, l := range libs {
		require.True(t, slim[l], "the sim server needs %s, which debian:bookworm-slim does not have", l)
	}
}

// The sim image serves video: its server, started as the image starts it (its ENV, non-root in
// an empty working directory that is its own, so the job store's default ./jobs.db is created
// there) with MODEL_RUNNER=tt-wan2.2, comes up with the video service, and a job submitted to
// it completes into an MP4 that ffmpeg wrote. The image's ffmpeg is Debian 12's package
// (TestDockerfileStages checks the install); here it is the host's, which CI installs (.ci/run:
// scripts/apt-ensure.sh ffmpeg). Without a Docker engine this is how far the image's video
// service can be checked: the image build itself is not run here.
func TestSimImageServesVideo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ffmpeg is missing under CI=true: .ci/run installs it (scripts/apt-ensure.sh ffmpeg)")
		}
		t.Skip("no ffmpeg on PATH: the sim image's video service cannot be started here")
	}
	bin := buildServer(t)
	port := freePort(t)
	work := t.TempDir() // the image's /app
	env := []string{
		"PATH=" + filepath.Dir(ffmpeg) + ":/usr/bin:/bin", "HOME=" + work,
		// The sim stage's ENV, with the port moved to a free one on loopback.
		"SERVICE_HOST=127.0.0.1", "SERVICE_PORT=" + strconv.Itoa(port),
		"MODEL_RUNNER=tt-wan2.2", "API_KEY=k", "MOCK_WARMUP_SECONDS=0", "NEW_DEVICE_DELAY_SECONDS=0",
		"MOCK_STEP_SECONDS=0.001", "MOCK_VIDEO_SCALE=16",
		// The image's default /tmp/videos, kept per test on a shared host.
		"TT_VIDEO_OUTPUT_DIR=" + filepath.Join(work, "videos"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	cmd.Dir = work
	logs := &lockedLog{} // read while the server writes: failure messages quote it
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	call := func(method, path string, body []byte) (int, []byte) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	// wait polls until done says so, failing when the server exits or ctx ends.
	wait := func(what string, done func() bool) {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for !done() {
			select {
			case err := <-exited:
				t.Fatalf("server exited while waiting for %s: %v\n%s", what, err, logs.String())
			case <-ctx.Done():
				t.Fatalf("%s: %v\n%s", what, ctx.Err(), logs.String())
			case <-tick.C:
			}
		}
	}
	wait("the video service to be ready", func() bool { code, _ := call(http.MethodGet, "/tt-liveness", nil); return code == http.StatusOK })

	code, body := call(http.MethodPost, "/v1/videos/generations", []byte(`{"prompt":"a lighthouse at dusk","num_inference_steps":4}`))
	require.Equal(t, http.StatusAccepted, code, "%s", body)
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  any    `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &job))
	wait("the job to end", func() bool {
		code, body := call(http.MethodGet, "/v1/videos/generations/"+job.ID, nil)
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.NoError(t, json.Unmarshal(body, &job))
		return job.Status == "completed" || job.Status == "failed" || job.Status == "cancelled"
	})
	require.Equal(t, "completed", job.Status, "error: %v\n%s", job.Error, logs.String())
	code, mp4 := call(http.MethodGet, "/v1/videos/generations/"+job.ID+"/download", nil)
	require.Equal(t, http.StatusOK, code, "%s", mp4)
	require.Greater(t, len(mp4), 12)
	require.Equal(t, "ftyp", string(mp4[4:8]), "an MP4 from ffmpeg")
	_, err = os.Stat(filepath.Join(work, "jobs.db"))
	require.NoError(t, err, "the job store is ./jobs.db in the working directory, which the image's user owns")
}

// lockedLog collects a process's output for failure messages while the process still writes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
