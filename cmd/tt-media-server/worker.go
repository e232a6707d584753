package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/runners/procrunner"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// workerCommand is the subcommand that runs one device group's runner in a child process.
const workerCommand = "device-worker"

// hardwareResetCommand is RESET_DEVICE_COMMAND's default; a mock build never runs it.
const hardwareResetCommand = "tt-smi -r"

// newRunnerFactory builds the scheduler's runner factory: with py, each group's runner is a
// Python worker process (Tenstorrent's Python model runner); with WORKER_ISOLATION=process a
// "device-worker" child process (this executable); otherwise the registry's runner runs in
// this process, on its group's submesh of parent (nil: no parent mesh).
func newRunnerFactory(s *config.Settings, runner string, reg *runners.Registry, log *slog.Logger, py *pythonWorker, parent *ttnn.Device) func(config.DeviceGroup) (runners.Runner, error) {
	ttmetal := config.ReadTTMetalEnv()
	cacheBase := ttmetal.Cache
	if cacheBase == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cacheBase = filepath.Join(dir, "tt-media-server", "tt-metal-cache")
		}
	}
	return func(g config.DeviceGroup) (runners.Runner, error) {
		spec := runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Mesh: s.DeviceMeshShape, Settings: s}
		if py == nil && s.WorkerIsolation != config.IsolationProcess {
			spec.Parent = parent
			return reg.New(runner, spec)
		}
		var opTimeout = s.InferenceTimeout + 2*procrunner.DefaultGrace
		if ttmetal.OperationTimeoutSet {
			opTimeout = 0 // inherited as it is
		}
		if py != nil {
			env := append(procrunner.WorkerEnv(spec, cacheBase, opTimeout), procrunner.HeadEnv(s, runner)...)
			return py.runner(s, g, runner, env, log), nil
		}
		return procrunner.New(procrunner.Config{
			WorkerID: g.ID,
			Args:     []string{workerCommand, g.ID, runner},
			Env:      procrunner.WorkerEnv(spec, cacheBase, opTimeout),
			Logger:   log,
		}), nil
	}
}

// mockRunsResetCommand reports whether a mock build runs RESET_DEVICE_COMMAND: only with
// worker processes (whose kill-and-restart it belongs to) and a command other than the
// hardware default, so a mock build never resets real chips.
func mockRunsResetCommand(s *config.Settings) bool {
	cmd := strings.TrimSpace(s.ResetDeviceCommand)
	return s.WorkerIsolation == config.IsolationProcess && cmd != "" && cmd != hardwareResetCommand
}

// runDeviceWorker is "tt-media-server device-worker GROUP": it loads the same settings as the
// server, builds the runner for the device group GROUP (as written in DEVICE_IDS, e.g. "0,1";
// "" for all devices) and serves the framed protocol on stdin/stdout until the server sends
// shutdown or closes stdin. Logs go to stderr, which the server forwards tagged with the
// worker id. The server starts it; it is not meant to be run by hand.
func runDeviceWorker(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) != 1 && len(args) != 2 {
		return fmt.Errorf("usage: tt-media-server %s GROUP [RUNNER] (started by the server; GROUP as in DEVICE_IDS)", workerCommand)
	}
	group := args[0]
	// The protocol owns the real stdout; everything else written to fd 1 (by Go or by C
	// libraries) goes to stderr instead.
	proto, err := protocolStdout()
	if err != nil {
		return err
	}
	defer proto.Close()
	settings, err := config.Load(".", mockMode)
	if err != nil {
		return err
	}
	settings.WorkerIsolation = config.IsolationProcess // this is the worker process
	log := workerLogger(settings, stderr)
	slog.SetDefault(log)
	var spec *runners.WorkerSpec
	for _, g := range settings.DeviceGroups {
		if g.ID == group {
			spec = &runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Mesh: settings.DeviceMeshShape, Settings: settings}
		}
	}
	if spec == nil {
		return fmt.Errorf("%s: device group %q is not in DEVICE_IDS=%q", workerCommand, group, settings.DeviceIDs)
	}
	reg := families.NewRegistry()
	runner := settings.ModelRunner
	if len(args) == 2 { // a MODEL_POOLS pool names its runner
		runner = args[1]
	}
	r, err := reg.New(runner, *spec)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("device worker serving", "pid", os.Getpid(), "devices", spec.Devices, "runner", runner,
		"visible", config.ReadTTMetalEnv().VisibleDevices)
	err = procrunner.Serve(ctx, r, os.Stdin, proto)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// protocolStdout moves the process's stdout to a new descriptor for the protocol and points
// fd 1 at stderr.
func protocolStdout() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("%s: dup stdout: %w", workerCommand, err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("%s: point stdout at stderr: %w", workerCommand, err)
	}
	return os.NewFile(uintptr(fd), "protocol"), nil
}

// workerLogger logs to stderr without timestamps (the server stamps forwarded lines).
func workerLogger(s *config.Settings, stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: s.SlogLevel(),
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}
