// Command profserve is tt-media-server wired as cmd/tt-media-server wires it (mock devices
// in process, metrics, the same environment variables), plus net/http/pprof on a separate loopback listener
// (PPROF_ADDR, default 127.0.0.1:6061), so the server-path benchmark can take a CPU profile
// of the real handler stack under load without changing the server. It exists only for
// scripts/bench-server-path.sh; keep its wiring in step with cmd/tt-media-server/main.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tenstorrent/tt-media-server-go/bench"
	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
	"github.com/tenstorrent/tt-media-server-go/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "profserve:", err)
		os.Exit(1)
	}
}

func run() error {
	settings, err := config.Load(".", true)
	if err != nil {
		return err
	}
	if !bench.IsLoopbackHost(settings.Host) {
		return fmt.Errorf("SERVICE_HOST=%s: %w", settings.Host, bench.ErrRemoteTarget)
	}
	level := slog.LevelWarn
	if settings.LogLevel == "INFO" || settings.LogLevel == "DEBUG" {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	reg := families.NewRegistry()
	service, err := reg.Service(settings.ModelRunner)
	if err != nil {
		return err
	}
	if service == "" || settings.ModelRunner == "mock" {
		service = runners.Service(settings.Service())
	}
	m := metrics.New()
	sched := scheduler.New(scheduler.Config{
		Groups:        settings.DeviceGroups,
		QueueSize:     settings.MaxQueueSize,
		MaxBatchSize:  settings.MaxBatchSize,
		MaxBatchDelay: settings.MaxBatchDelay,
		PerClientCap:  settings.MaxQueuePerClient,
		ClientWeights: settings.ClientWeights,
		StartDelay:    settings.NewDeviceDelay,
		Timeout:       settings.InferenceTimeout,
		MaxRestarts:   settings.MaxWorkerRestarts,
		RestartDelay:  settings.ResetDeviceSleep,
		CheckInterval: settings.WorkerCheckInterval,
		Reset:         func(context.Context, []config.DeviceGroup) error { return nil },
		Logger:        log,
		OnJobDone: func(worker string, wait, device time.Duration, outcome string) {
			m.JobDone(settings.ModelRunner, worker, wait, device, outcome)
		},
	}, func(g config.DeviceGroup) (runners.Runner, error) {
		return reg.New(settings.ModelRunner, runners.WorkerSpec{
			WorkerID: g.ID, Devices: g.Devices, Mesh: settings.DeviceMeshShape, Settings: settings,
		})
	})
	m.AddSource(settings.ModelRunner, sched)
	srv := server.New(server.Deps{Settings: settings, Service: service, Sched: sched, Logger: log, Mock: true, Metrics: m})
	addr := net.JoinHostPort(settings.Host, strconv.Itoa(settings.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	pprofAddr := os.Getenv("PPROF_ADDR")
	if pprofAddr == "" {
		pprofAddr = "127.0.0.1:6061"
	}
	if h, _, err := net.SplitHostPort(pprofAddr); err != nil || !bench.IsLoopbackHost(h) {
		return fmt.Errorf("PPROF_ADDR=%s must be a loopback host:port", pprofAddr)
	}
	pln, err := net.Listen("tcp", pprofAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", pprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	pprofSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sched.Start(ctx)
	httpSrv := srv.HTTPServer(addr)
	errc := make(chan error, 2)
	go func() { errc <- httpSrv.Serve(ln) }()
	go func() { errc <- pprofSrv.Serve(pln) }()
	fmt.Fprintf(os.Stderr, "profserve: serving on %s, pprof on %s\n", ln.Addr(), pln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = pprofSrv.Shutdown(grace)
	schedErr := sched.Stop(grace)
	if err := httpSrv.Shutdown(grace); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return schedErr
}
