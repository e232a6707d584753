package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/procrunner"
	"github.com/tenstorrent/tt-media-server-go/workers/python"
)

// pythonWorker is how a pool with the python backend starts its workers: the interpreter and
// the installed worker script (workers/python, embedded in this binary).
type pythonWorker struct {
	exe, script string
}

// installPythonWorker writes the embedded Python worker under the user's cache directory when a
// pool runs Python workers; nil otherwise.
func installPythonWorker(s *config.Settings, log *slog.Logger) (*pythonWorker, error) {
	if !s.PythonPools() {
		return nil, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	script, err := python.Install(filepath.Join(base, "tt-media-server"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.PythonExecutable); err != nil {
		return nil, fmt.Errorf("PYTHON_EXECUTABLE=%s: %w", s.PythonExecutable, err)
	}
	log.Info("python workers", "python", s.PythonExecutable, "script", script, "runner_path", s.PythonRunnerPath,
		"runner_class", s.PythonRunnerClass)
	return &pythonWorker{exe: s.PythonExecutable, script: script}, nil
}

// runner is the parent side of one Python worker process for group g: the same supervision as
// the Go device worker (procrunner), another executable.
// A video model's worker also gets TT_VIDEO_FPS, the clip rate the catalogue gives the model
// (HEAD's video runners answer bare frames and leave the rate to their VideoManager), and its
// own export directory under the job store's (jobs.ExportDir, on TT_VIDEO_OUTPUT_DIR's
// filesystem), where HEAD's self-encoding runners write their MP4s (procrunner points the
// worker's TT_VIDEO_OUTPUT_DIR there).
func (p *pythonWorker) runner(s *config.Settings, g config.DeviceGroup, runner string, env []string, log *slog.Logger) runners.Runner {
	env = append(env, "MODEL_RUNNER="+runner)
	export := ""
	if m, ok := catalogue.Lookup(runner); ok && m.Video != nil {
		env = append(env, "TT_VIDEO_FPS="+strconv.Itoa(m.Video.FPS))
		export = filepath.Join(jobs.ExportDir(s.Video.OutputDir, s.Video.ReplicaID), url.PathEscape(runner+"@"+g.ID))
	}
	return procrunner.New(procrunner.Config{
		WorkerID:  g.ID,
		Path:      p.exe,
		Args:      []string{"-u", p.script, g.ID, runner},
		Env:       env,
		Logger:    log,
		ExportDir: export,
	})
}
