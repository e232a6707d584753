// Command tt-media-server is the media inference server: it loads the settings, builds the
// runners, the scheduler and the HTTP server, and stops gracefully on SIGINT/SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
	"github.com/tenstorrent/tt-media-server-go/server"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tt-media-server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case workerCommand:
			return runDeviceWorker(ctx, args[1:], stderr)
		case "-h", "--help", "help":
			fmt.Fprintln(stderr, "usage: tt-media-server   (configured by environment variables; see README.md)")
			return nil
		case "audio-features":
			return audioFeatures(ctx, args[1:], os.Stdin, os.Stdout, stderr)
		case "audio-decode":
			return audioDecode(ctx, args[1:], os.Stdin, os.Stdout, stderr)
		default:
			return fmt.Errorf("unknown argument %q (the server is configured by environment variables; see README.md)", args[0])
		}
	}
	settings, err := config.Load(".", mockMode)
	if err != nil {
		return err
	}
	// AUDIO_LANGUAGE must be a language Whisper knows (config cannot ask the tokenizer).
	if _, err := whispertokenizer.NormalizeLanguage(settings.AudioLanguage); err != nil {
		return fmt.Errorf("%w: AUDIO_LANGUAGE=%q: %w", config.ErrInvalid, settings.AudioLanguage, err)
	}
	log, closeLog, err := newLogger(settings, stderr)
	if err != nil {
		return err
	}
	defer closeLog()

	if settings.DefaultThrottleLevel != "" {
		// As the Python server's device workers do: TT-Metal reads TT_MM_THROTTLE_PERF when a
		// device opens, here (in-process workers) and in every worker process (inherited).
		if err := os.Setenv("TT_MM_THROTTLE_PERF", settings.DefaultThrottleLevel); err != nil {
			return fmt.Errorf("DEFAULT_THROTTLE_LEVEL: set TT_MM_THROTTLE_PERF: %w", err)
		}
	}

	reg := families.NewRegistry()

	if settings.Mock {
		log.Warn("MOCK-DEVICE MODE: devices are SIMULATED; outputs are not real model inference",
			"mock_devices", settings.MockDevicesCount, "worker_groups", len(settings.DeviceGroups))
	}
	log.Info("starting tt-media-server", "settings", settings.Redacted())
	if len(settings.HeadNoEffect) > 0 {
		log.Warn("settings of the Python server's process model have no effect here", "settings", settings.HeadNoEffect)
	}
	// Said once: which codec serves JPEG and WebP (libjpeg-turbo / libwebp loaded at run time,
	// or the pure-Go twins), also in /tt-liveness's image_codecs.
	log.Info("image codecs", "codecs", imaging.UseNativeCodecs(settings.NativeCodecs))
	if p := audio.FFmpegPath(); p != "" {
		log.Info("audio: M4A/MP4 (AAC) and non-Opus WebM uploads decode through ffmpeg", "ffmpeg", p)
	} else {
		log.Info("audio: no ffmpeg on PATH: M4A/MP4 (AAC) and non-Opus WebM uploads get 415 (WAV, MP3, FLAC, Ogg and WebM/Opus decode in Go)")
	}

	var parent *ttnn.Device
	if settings.Mock && settings.WorkerIsolation != config.IsolationProcess {
		// In process the workers' devices are submeshes of one parent mesh (TT-Metal's way of
		// serving several device groups from one process); it outlives the schedulers, and is
		// passed to every worker's runner (WorkerSpec.Parent).
		parent, err = openParent(ctx, settings, log)
		if err != nil {
			return err
		}
		if parent != nil {
			defer func() {
				if err := parent.Close(); err != nil {
					log.Warn("close the parent mesh", "err", err)
				}
			}()
		}
	}

	m := metrics.New()
	var pools []server.Pool
	var scheds []*scheduler.Scheduler
	pyWorker, err := installPythonWorker(settings, log)
	if err != nil {
		return err
	}
	for _, p := range settings.Pools {
		var py *pythonWorker
		if settings.PoolBackend(p) == config.BackendPython {
			py = pyWorker
		}
		service, err := reg.Service(p.Runner)
		if err != nil {
			return err
		}
		if service == "" || p.Runner == "mock" {
			service = runners.Service(p.Service)
		}
		runner := p.Runner
		sc := schedulerConfig(settings, p, service)
		sc.Canary.Probe = func(deep bool) (runners.Request, func(runners.Result) error) {
			return runners.ProbeRequest(runner, service, deep)
		}
		sc.Canary.OnState = func(state string) { m.CanaryState(runner, state, scheduler.CanaryStates) }
		sc.Canary.OnProbe = func(depth string, ok bool, latency time.Duration) { m.CanaryProbe(runner, depth, ok, latency) }
		sc.Reset = resetDevices(settings, py != nil, log)
		sc.Logger = log.With("model", runner)
		sc.OnJobDone = func(worker string, wait, device time.Duration, outcome string) {
			m.JobDone(runner, worker, wait, device, outcome)
		}
		sc.OnCancelFreed = func(worker string, stepsAfter int, after time.Duration) {
			m.CancelFreed(runner, worker, stepsAfter, after)
		}
		sched := scheduler.New(sc, newRunnerFactory(settings, runner, reg, log, py, parent))
		m.AddSource(runner, sched)
		pools = append(pools, server.Pool{Service: service, Runner: runner, Sched: sched})
		scheds = append(scheds, sched)
	}
	videoJobs, closeVideo, err := openVideoJobs(ctx, settings, pools, log)
	if err != nil {
		return err
	}
	defer closeVideo()
	srv := server.New(server.Deps{Settings: settings, Pools: pools, Logger: log, Mock: settings.Mock, Metrics: m, Video: videoJobs})
	addr := net.JoinHostPort(settings.Host, strconv.Itoa(settings.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SERVICE_HOST/SERVICE_PORT): %w", addr, err)
	}
	ln = srv.LimitListener(ln)
	httpSrv := srv.HTTPServer(addr)
	if settings.PprofAddr != "" {
		_, stopPprof, err := startPprof(settings.PprofAddr, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			stopPprof(ctx)
		}()
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && settings.APIKey == config.DefaultAPIKey {
		log.Warn("API_KEY is the well-known default \"your-secret-key\" and the server listens beyond loopback: anyone who can reach "+
			ln.Addr().String()+" can use it; set API_KEY (or API_KEYS / JWT_SECRET), or SERVICE_HOST=127.0.0.1",
			"addr", ln.Addr().String())
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, sched := range scheds {
		sched.Start(ctx)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	for _, p := range pools {
		log.Info("serving", "addr", ln.Addr().String(), "service", string(p.Service), "runner", p.Runner)
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	stop()
	srv.CloseVideo() // running video jobs end as interrupted; queued ones too
	log.Info("shutting down: no new requests; finishing in-flight work", "grace", settings.ShutdownGrace)
	grace, cancel := context.WithTimeout(context.Background(), settings.ShutdownGrace)
	defer cancel()
	// Stop the scheduler first so queued work is answered (or refused) while connections
	// are still open, then close the listener and wait for the handlers to write.
	schedErr := make(chan error, len(scheds))
	for _, sched := range scheds {
		go func() { schedErr <- sched.Stop(grace) }()
	}
	// The HTTP server gets a moment more than the scheduler: jobs still running when the grace
	// ends are answered 503 "shutting down" (with Retry-After), and those answers must be
	// written before the connections close.
	httpGrace, cancelHTTP := context.WithTimeout(context.Background(), settings.ShutdownGrace+2*time.Second)
	defer cancelHTTP()
	httpDone := make(chan error, 1)
	go func() { httpDone <- httpSrv.Shutdown(httpGrace) }()
	time.Sleep(50 * time.Millisecond) // let Shutdown close the listener first
	srv.CloseUnusedConns()
	httpErr := <-httpDone
	for range scheds {
		if err := <-schedErr; err != nil {
			log.Warn("scheduler stop", "err", err)
		}
	}
	if httpErr != nil && !errors.Is(httpErr, http.ErrServerClosed) {
		log.Warn("http shutdown", "err", httpErr)
		_ = httpSrv.Close()
	}
	log.Info("stopped")
	return nil
}

// resetDevices returns the device-reset hook: the RESET_DEVICE_COMMAND; simulated in
// mock-device mode unless mockRunsResetCommand or the pool's runners are Python workers
// (python: they drive whatever devices their runners open, so the command always runs).
func resetDevices(s *config.Settings, python bool, log *slog.Logger) scheduler.ResetFunc {
	return func(ctx context.Context, groups []config.DeviceGroup) error {
		ids := make([]string, 0, len(groups))
		for _, g := range groups {
			ids = append(ids, g.ID)
		}
		if s.Mock && !python && !mockRunsResetCommand(s) {
			log.Info("simulated device reset", "groups", ids)
			return nil
		}
		return runResetCommand(ctx, s.ResetDeviceCommand, ids, log)
	}
}

// newLogger builds the process logger from LOG_LEVEL and LOG_FILE.
func newLogger(s *config.Settings, stderr io.Writer) (*slog.Logger, func(), error) {
	level := s.SlogLevel()
	w := stderr
	closeFn := func() {}
	if s.LogFile != "" {
		f, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("LOG_FILE=%q: %w", s.LogFile, err)
		}
		w = io.MultiWriter(stderr, f)
		closeFn = func() { _ = f.Close() }
	}
	opts := &slog.HandlerOptions{Level: level}
	if s.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), closeFn, nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), closeFn, nil
}

// schedulerConfig is the one place a pool's scheduler settings are derived from the settings:
// its device groups, the queue and batching limits, the per-client share, the worker restart
// and canary rules, and the job timeout (DEFAULT_INFERENCE_TIMEOUT_SECONDS; a video pool's
// VIDEO_JOB_TIMEOUT_SECONDS, as a video job runs minutes to hours). The caller adds the
// wiring: the canary's probe and metrics, the device reset, the logger and the job metrics.
func schedulerConfig(s *config.Settings, p config.Pool, service runners.Service) scheduler.Config {
	timeout := s.InferenceTimeout
	if service == runners.ServiceVideo {
		timeout = s.Video.JobTimeout // 0: no limit
	}
	return scheduler.Config{
		Groups:         p.Groups,
		QueueSize:      s.MaxQueueSize,
		MaxBatchSize:   s.MaxBatchSize,
		MaxBatchDelay:  s.MaxBatchDelay,
		PerClientCap:   s.MaxQueuePerClient,
		ClientWeights:  s.ClientWeights,
		StartDelay:     s.NewDeviceDelay,
		Timeout:        timeout,
		MaxRestarts:    s.MaxWorkerRestarts,
		RestartDelay:   s.ResetDeviceSleep,
		CheckInterval:  s.WorkerCheckInterval,
		CanaryInterval: s.CanaryInterval,
		Canary:         scheduler.CanaryConfig{CanarySettings: s.Canary},
	}
}
