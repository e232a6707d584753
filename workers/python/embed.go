// Package python carries the Python worker (tt_worker.py and its tt_worker_*.py modules) in
// the server binary and installs it for DEVICE_BACKEND=python: the worker that hosts
// Tenstorrent's own model runners (tt-media-server HEAD's BaseDeviceRunner classes) behind the
// worker protocol of docs/WORKER-PROTOCOL.md. fakes/ holds the fake ttnn and runners the tests
// point PYTHON_RUNNER_PATH at; it is not embedded.
package python

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed tt_worker*.py
var files embed.FS

// Script is the worker's entry point within an installed directory.
const Script = "tt_worker.py"

// DefaultExecutable is Debian's interpreter (a `python3` on PATH may be a pyenv shim); on a
// Tenstorrent host PYTHON_EXECUTABLE names tt-metal's environment's python instead.
const DefaultExecutable = "/usr/bin/python3"

// Install writes the worker's files into a directory under base named by their content hash
// (so servers of different builds never share one) and returns the script's path. A complete
// existing install is reused; files are written to a temporary directory and renamed into
// place, so concurrent servers do not see half-written files.
func Install(base string) (string, error) {
	h := sha256.New()
	names, err := fs.Glob(files, "*.py")
	if err != nil {
		return "", err
	}
	for _, n := range names {
		b, _ := files.ReadFile(n)
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	dir := filepath.Join(base, "python-worker-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, Script)); err == nil {
		return filepath.Join(dir, Script), nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("install the python worker: %w", err)
	}
	tmp, err := os.MkdirTemp(base, ".python-worker-")
	if err != nil {
		return "", fmt.Errorf("install the python worker: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, n := range names {
		b, _ := files.ReadFile(n)
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			return "", fmt.Errorf("install the python worker: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("install the python worker: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, Script)); serr == nil {
			return filepath.Join(dir, Script), nil // another server installed it first
		}
		return "", fmt.Errorf("install the python worker: %w", err)
	}
	return filepath.Join(dir, Script), nil
}
