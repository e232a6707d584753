package deploy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const fakeServer = `#!/bin/sh
# fake tt-media-server: records its arguments and environment, exits with $FAKE_EXIT.
{ echo "argc=$#"; env | LC_ALL=C sort; } > "$FAKE_OUT"
exit "${FAKE_EXIT:-0}"
`

type scriptResult struct {
	stdout, stderr string
	code           int
}

func runScript(t *testing.T, script string, env []string, args ...string) scriptResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return scriptResult{out.String(), errb.String(), code}
}

func envLines(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

func writeFake(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "tt-media-server")
	require.NoError(t, os.WriteFile(p, []byte(fakeServer), 0o755))
	return p
}

func TestRunScriptSyntax(t *testing.T) {
	script := filepath.Join(repoRoot(t), "run_uvicorn_equivalent.sh")
	out, err := exec.Command("bash", "-n", script).CombinedOutput()
	require.NoError(t, err, string(out))
	fi, err := os.Stat(script)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&0o111, "run_uvicorn_equivalent.sh must be executable")
}

func TestRunScriptPrintEnv(t *testing.T) {
	script := filepath.Join(repoRoot(t), "run_uvicorn_equivalent.sh")
	fake := writeFake(t, t.TempDir())
	bin := "TT_MEDIA_SERVER_BIN=" + fake
	tests := []struct {
		name      string
		env       []string
		args      []string
		code      int
		wantEnv   map[string]string
		absent    []string
		stderr    []string
		notStderr []string
	}{
		{
			name:    "defaults: uvicorn --host 0.0.0.0 --port 8000",
			env:     []string{bin},
			wantEnv: map[string]string{"SERVICE_HOST": "0.0.0.0", "SERVICE_PORT": "8000"},
			absent:  []string{"TP2", "MODEL", "DEVICE"},
		},
		{
			name:    "SERVICE_PORT kept, as run_uvicorn.sh's ${SERVICE_PORT:-8000}",
			env:     []string{bin, "SERVICE_PORT=8100"},
			wantEnv: map[string]string{"SERVICE_PORT": "8100"},
		},
		{
			name:    "uvicorn-style arguments",
			env:     []string{bin},
			args:    []string{"--skip-venv", "--host=127.0.0.1", "--port", "9000"},
			wantEnv: map[string]string{"SERVICE_HOST": "127.0.0.1", "SERVICE_PORT": "9000"},
		},
		{
			name:    "TP2 for SDXL",
			env:     []string{bin, "TP2=true", "MODEL_RUNNER=tt-sdxl-trace"},
			wantEnv: map[string]string{"TP2": "true", "MODEL_RUNNER": "tt-sdxl-trace"},
			stderr:  []string{"TP2=true: device mesh (2,1)"}, notStderr: []string{"warning"},
		},
		{
			name:    "TP2=1 is off, as in Python",
			env:     []string{bin, "TP2=1"},
			wantEnv: map[string]string{"TP2": "1"},
			stderr:  []string{"warning: TP2='1' is OFF"}, notStderr: []string{"device mesh"},
		},
		{
			name:    "TP2 with Whisper is flagged",
			env:     []string{bin, "TP2=TRUE", "MODEL_RUNNER=tt-whisper"},
			wantEnv: map[string]string{"TP2": "TRUE"},
			stderr:  []string{"TP2=true: device mesh (2,1)", "TP2 is meant for SDXL"},
		},
		{
			name:      "SD_3_5_BASE with MODEL and DEVICE",
			env:       []string{bin, "SD_3_5_BASE=true", "MODEL=stable-diffusion-3.5-large", "DEVICE=galaxy"},
			wantEnv:   map[string]string{"SD_3_5_BASE": "true", "MODEL": "stable-diffusion-3.5-large", "DEVICE": "galaxy"},
			stderr:    []string{"SD_3_5_BASE=true: device mesh (2,4), 8 chips", "MODEL=stable-diffusion-3.5-large DEVICE=galaxy: the server applies that preset"},
			notStderr: []string{"warning"},
		},
		{
			name:    "SD_3_5_FAST beats SD_3_5_BASE and TP2",
			env:     []string{bin, "SD_3_5_FAST=True", "SD_3_5_BASE=true", "TP2=true", "MODEL=stable-diffusion-3.5-large", "DEVICE=galaxy"},
			wantEnv: map[string]string{"SD_3_5_FAST": "True", "SD_3_5_BASE": "true", "TP2": "true"},
			stderr:  []string{"SD_3_5_FAST=true: device mesh (4,8), 32 chips", "SD_3_5_BASE=true is ignored", "TP2=true is ignored"},
		},
		{
			name:    "SD_3_5_FAST with the SDXL runner is flagged",
			env:     []string{bin, "SD_3_5_FAST=true", "MODEL_RUNNER=tt-sdxl-trace"},
			wantEnv: map[string]string{"SD_3_5_FAST": "true"},
			stderr:  []string{"SD_3_5_FAST is meant for SD3.5"},
		},
		{
			name:    "MODEL without DEVICE",
			env:     []string{bin, "MODEL=stable-diffusion-xl-base-1.0"},
			wantEnv: map[string]string{"MODEL": "stable-diffusion-xl-base-1.0"},
			absent:  []string{"DEVICE"},
			stderr:  []string{"MODEL and DEVICE select a preset only together"},
		},
		{
			name:    "secrets are redacted",
			env:     []string{bin, "API_KEY=hunter2", "JWT_SECRET=s3cr3t", "HF_TOKEN=hf_x", "DEVICE_IDS=(0),(1)"},
			wantEnv: map[string]string{"API_KEY": "***", "JWT_SECRET": "***", "HF_TOKEN": "***", "DEVICE_IDS": "(0),(1)"},
		},
		{name: "bad port", env: []string{bin}, args: []string{"--port", "80x"}, code: 2, stderr: []string{"not a port number"}},
		{name: "missing port value", env: []string{bin}, args: []string{"--port"}, code: 2, stderr: []string{"--port needs a value"}},
		{name: "unknown argument", env: []string{bin}, args: []string{"--reload"}, code: 2, stderr: []string{"unknown argument '--reload'"}},
		{name: "no binary", env: []string{"TT_MEDIA_SERVER_BIN=/nonexistent/tt-media-server"}, code: 127, stderr: []string{"binary not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runScript(t, script, tc.env, append(tc.args, "--print-env")...)
			require.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			for _, s := range tc.stderr {
				require.Contains(t, r.stderr, s)
			}
			for _, s := range tc.notStderr {
				require.NotContains(t, r.stderr, s)
			}
			if tc.code != 0 {
				require.Empty(t, r.stdout)
				return
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			require.Equal(t, "exec "+fake, lines[len(lines)-1])
			got := envLines(strings.Join(lines[:len(lines)-1], "\n"))
			for k, v := range tc.wantEnv {
				require.Equal(t, v, got[k], "%s in:\n%s", k, r.stdout)
			}
			for _, k := range tc.absent {
				require.NotContains(t, got, k)
			}
			for _, secret := range []string{"hunter2", "s3cr3t", "hf_x"} {
				require.NotContains(t, r.stdout+r.stderr, secret)
			}
			_, err := os.Stat(filepath.Join(filepath.Dir(fake), "ran"))
			require.True(t, os.IsNotExist(err))
		})
	}
}

// Without --print-env the script execs the binary with that environment and no arguments,
// and the binary's exit status is the script's.
func TestRunScriptExecs(t *testing.T) {
	script := filepath.Join(repoRoot(t), "run_uvicorn_equivalent.sh")
	dir := t.TempDir()
	fake := writeFake(t, dir)
	out := filepath.Join(dir, "ran")
	r := runScript(t, script, []string{"TT_MEDIA_SERVER_BIN=" + fake, "FAKE_OUT=" + out, "FAKE_EXIT=3",
		"TP2=true", "MODEL_RUNNER=tt-sdxl-trace"}, "--skip-venv", "--port", "8123")
	require.Equal(t, 3, r.code, r.stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	got := envLines(string(b))
	require.Equal(t, "0", got["argc"], "the server takes no arguments")
	require.Equal(t, "8123", got["SERVICE_PORT"])
	require.Equal(t, "0.0.0.0", got["SERVICE_HOST"])
	require.Equal(t, "true", got["TP2"])
}

// A copy of the script next to a tt-media-server binary finds it without TT_MEDIA_SERVER_BIN
// (the layout of the images: both in /usr/local/bin).
func TestRunScriptFindsSiblingBinary(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "run_uvicorn_equivalent.sh"))
	require.NoError(t, err)
	dir := t.TempDir()
	script := filepath.Join(dir, "run_uvicorn_equivalent.sh")
	require.NoError(t, os.WriteFile(script, src, 0o755))
	fake := writeFake(t, dir)
	r := runScript(t, script, nil, "--print-env")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "exec "+fake+"\n")
}

// `source run_uvicorn_equivalent.sh`, as the README does with run_uvicorn.sh: the caller's
// shell keeps running and keeps its options.
func TestRunScriptSourced(t *testing.T) {
	script := filepath.Join(repoRoot(t), "run_uvicorn_equivalent.sh")
	dir := t.TempDir()
	fake := writeFake(t, dir)
	out := filepath.Join(dir, "ran")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c",
		`s=$1; shift; source "$s"; rc=$?; echo "rc=$rc opts=$-"; type _ttms_main >/dev/null 2>&1 && echo leaked; echo "port=${SERVICE_PORT-unset}"`,
		"sh", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TT_MEDIA_SERVER_BIN=" + fake, "FAKE_OUT=" + out, "FAKE_EXIT=4", "SD_3_5_BASE=true"}
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	s := string(b)
	require.Contains(t, s, "rc=4 ")
	require.NotRegexp(t, `opts=\S*e`, s, "set -e leaked into the caller")
	require.NotContains(t, s, "leaked")
	require.Contains(t, s, "port=unset", "the caller's environment is untouched")
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(got), "SD_3_5_BASE=true")
}

// In a fresh source checkout (go.mod and cmd/tt-media-server beside the script, no binary) the
// script builds the binary next to itself with go build, says so, and runs it; without Go it
// fails saying how to build it.
func TestRunScriptBuildsInFreshClone(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "run_uvicorn_equivalent.sh"))
	require.NoError(t, err)
	dir := t.TempDir()
	script := filepath.Join(dir, "run_uvicorn_equivalent.sh")
	require.NoError(t, os.WriteFile(script, src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cmd", "tt-media-server"), 0o755))

	// Without Go on PATH: exit 127 and the build command in the message.
	r := runScript(t, script, nil)
	require.Equal(t, 127, r.code, r.stderr)
	require.Contains(t, r.stderr, "go build -o tt-media-server ./cmd/tt-media-server")

	// With a (fake) go: it is called as `go build -o tt-media-server ./cmd/tt-media-server` in
	// the checkout, and the script then execs what it built.
	gobin := t.TempDir()
	fakeGo := "#!/bin/sh\n[ \"$1 $2 $3 $4\" = \"build -o tt-media-server ./cmd/tt-media-server\" ] || exit 9\n" +
		"cp \"" + writeFake(t, t.TempDir()) + "\" \"$PWD/$3\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(gobin, "go"), []byte(fakeGo), 0o755))
	out := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command("bash", script)
	cmd.Env = []string{"PATH=" + gobin + ":/usr/bin:/bin", "FAKE_OUT=" + out, "FAKE_EXIT=0"}
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	require.Contains(t, string(b), "building it")
	_, err = os.Stat(out)
	require.NoError(t, err, "the built binary was not run")
	_, err = os.Stat(filepath.Join(dir, "tt-media-server"))
	require.NoError(t, err)
}
