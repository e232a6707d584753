package deploy

import (
	"context"
	"net"
	"net/http"
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

var (
	serverOnce sync.Once
	serverBin  string
	serverErr  error
	serverOut  []byte
)

// buildServer builds cmd/tt-media-server of the main module once per test run (mock-device
// build: no ttnn tag).
func buildServer(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	serverOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			serverErr = err
			return
		}
		serverBin = filepath.Join(dir, "tt-media-server")
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", serverBin, "./cmd/tt-media-server")
		cmd.Dir = root
		serverOut, serverErr = cmd.CombinedOutput()
	})
	require.NoError(t, serverErr, "building the server: %s", serverOut)
	return serverBin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The environment the chart renders must be accepted by the real server: each scenario's
// ConfigMap + Secret start the (mock-device) binary, which must become ready on /health.
// Hardware scenarios get MOCK_DEVICES_COUNT=32 so that their DEVICE_IDS and meshes exist.
func TestChartEnvStartsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	tests := []struct {
		name  string
		set   []string
		extra []string
	}{
		{"galaxy sdxl", []string{"auth.apiKey=k"}, []string{"MOCK_DEVICES_COUNT=32"}},
		{"whisper 24-26", []string{"auth.apiKey=k", "model.runner=tt-whisper", "device.ids=(24)\\,(25)\\,(26)", "auth.jwtSecret=s"}, []string{"MOCK_DEVICES_COUNT=32"}},
		{"sd3.5 fast", []string{"auth.apiKey=k", "model.runner=tt-sd3.5", "model.name=stable-diffusion-3.5-large", "device.type=galaxy", "device.sd35Fast=true", "device.setDeviceIds=false"}, []string{"MOCK_DEVICES_COUNT=32"}},
		{"mock", []string{"auth.apiKey=k", "mock=true"}, nil},
	}
	bin := ""
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "rel", chartDir}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			require.NoError(t, err, out)
			r := decodeManifests(t, out)
			if bin == "" {
				bin = buildServer(t)
			}
			port := freePort(t)
			env := []string{"PATH=/usr/bin:/bin", "MOCK_WARMUP_SECONDS=0.05", "NEW_DEVICE_DELAY_SECONDS=0"}
			for k, v := range r.configMap.Data {
				if k == "SERVICE_PORT" {
					v = strconv.Itoa(port)
				}
				env = append(env, k+"="+v)
			}
			for k, v := range r.secret.StringData {
				env = append(env, k+"="+v)
			}
			env = append(env, tc.extra...)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = env
			cmd.Dir = t.TempDir()
			var logs strings.Builder
			cmd.Stdout, cmd.Stderr = &logs, &logs
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
			deadline := time.Now().Add(15 * time.Second)
			ready := false
			for !ready && time.Now().Before(deadline) {
				select {
				case err := <-exited:
					t.Fatalf("server exited: %v\n%s", err, logs.String())
				case <-time.After(50 * time.Millisecond):
				}
				resp, err := http.Get(url)
				if err == nil {
					ready = resp.StatusCode == http.StatusOK
					resp.Body.Close()
				}
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-exited:
				require.NoError(t, err, "graceful stop\n%s", logs.String())
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("server did not stop on SIGTERM\n%s", logs.String())
			}
			require.True(t, ready, "never ready on /health\n%s", logs.String())
		})
	}
}
