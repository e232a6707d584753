// Package server is the HTTP face of the media server: the gin engine, the Python
// tt-media-server's routes (each also under /v1), authentication, request ids and access logs,
// body limits, request parsing and validation into typed runner requests, error envelopes,
// and the JSON / NDJSON writers. Handlers never see devices; they hand typed jobs to the
// scheduler and write what comes back.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// Scheduler is what the handlers need from the scheduler (a seam for tests).
type Scheduler interface {
	Submit(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error)
	Ready() bool
	QueueLen() int
	QueueCap() int
	RetryAfter() time.Duration
	Workers() map[string]scheduler.WorkerStatus
	// RestartWorker and RestartAll reset one or every worker: a serving one restarts, a
	// failed one is revived; each says what it did.
	RestartWorker(id string) (scheduler.WorkerReset, error)
	RestartAll() []scheduler.WorkerReset
	// Canary is the canary health monitor's state (HEAD's canary_state / canary_alive).
	Canary() scheduler.CanaryStatus
}

// reserver is implemented by schedulers that admit a request's jobs all or none
// (scheduler.Scheduler).
type reserver interface {
	Reserve(ctx context.Context, n int) (*scheduler.Reservation, error)
	MaxReservation() int
}

// reserve holds n queue places of svc's scheduler for one request's jobs and returns ctx
// carrying them; release gives them back. One job needs none. param names the request field
// that asked for n, for a request that can never fit (400).
func (s *Server) reserve(ctx context.Context, svc runners.Service, n int, param string) (release func(), _ context.Context, err error) {
	r, ok := s.pool(svc).Sched.(reserver)
	if !ok || n <= 1 {
		return func() {}, ctx, nil
	}
	res, err := r.Reserve(ctx, n)
	if err != nil {
		if errors.Is(err, scheduler.ErrTooManyJobs) && param != "" {
			err = &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf("%s=%d: %v", param, n, err)}
		}
		return nil, ctx, err
	}
	return res.Release, scheduler.WithReservation(ctx, res), nil
}

// Pool is one model the server fronts: its API family, runner name and scheduler.
type Pool struct {
	Service runners.Service
	Runner  string
	Sched   Scheduler
}

// Deps are the server's collaborators.
type Deps struct {
	Settings *config.Settings
	// Pools are the models served (MODEL_POOLS), at most one per API family. When empty, the
	// single model is Service + Sched with runner Settings.ModelRunner.
	Pools   []Pool
	Service runners.Service
	Sched   Scheduler
	Logger  *slog.Logger
	// Mock reports mock-device mode (shown in /tt-liveness).
	Mock bool
	// Metrics, when set, records requests and media units and serves /metrics.
	Metrics *metrics.Metrics
	// Video is the job store and result files of a video pool (nil without one).
	Video *VideoJobs
}

// Server holds the HTTP handlers.
type Server struct {
	cfg     *config.Settings
	loras   *diffusion.LoRACache // LoRA adapters checked before queueing (LORA_ROOT; headers only, no tensor data)
	pools   []Pool
	byName  map[runners.Service]*Pool
	log     *slog.Logger
	auth    *authenticator
	engine  *gin.Engine
	mock    bool
	metrics *metrics.Metrics
	idem    *idempotencyStore
	limits  *rateLimiter
	conns   connTracker
	// liveness is /tt-liveness's last answer (livenesscache.go).
	liveness livenessCache
	// imageMem is IMAGE_MEMORY_BUDGET_BYTES, shared by the image uploads in flight.
	imageMem *memBudget
	// audioMem is AUDIO_MEMORY_BUDGET_BYTES, shared by the audio decodes in flight.
	audioMem *memBudget
	// audioLanguage is AUDIO_LANGUAGE as a Whisper language code: the language of Python-dialect
	// transcriptions ("" = detect, when the setting names no known language; cmd checks it).
	audioLanguage string
	// video serves the video routes (video.go); nil without a video pool.
	video *videoService
	// fanoutChunkSeconds bounds a fanned-out transcription's chunks (0: 30 s, Whisper's
	// window); a seam for tests, which use shorter audio.
	fanoutChunkSeconds float64
	// speech is the text-to-speech routes' state (speech.go); nil without a speech pool.
	speech *speechState
}

// New builds the server and its routes.
func New(d Deps) *Server {
	gin.SetMode(gin.ReleaseMode)
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     d.Settings,
		pools:   d.Pools,
		byName:  map[runners.Service]*Pool{},
		log:     log,
		limits:  newRateLimiter(d.Settings.RateLimit, d.Settings.RateBurst),
		mock:    d.Mock,
		metrics: d.Metrics,
		idem:    newIdempotencyStore(),
	}
	s.imageMem = newMemBudget(d.Settings.ImageMemoryBudget, "IMAGE_MEMORY_BUDGET_BYTES", "images and LoRA checks")
	s.audioMem = newMemBudget(d.Settings.AudioMemoryBudget, "AUDIO_MEMORY_BUDGET_BYTES", "audio decodes")
	s.loras = diffusion.NewLoRACache(diffusion.LoRAOptions{Entries: 16, Check: true, MaxFileBytes: d.Settings.LoRAMaxFileBytes, Budget: s.imageMem})
	if d.Settings.AudioLanguage != "" {
		code, err := whisper.NormalizeLanguage(d.Settings.AudioLanguage)
		if err != nil {
			log.Error("AUDIO_LANGUAGE names no Whisper language; Python-dialect transcriptions detect it", "err", err)
		}
		s.audioLanguage = code
	}
	if len(s.pools) == 0 {
		s.pools = []Pool{{Service: d.Service, Runner: d.Settings.ModelRunner, Sched: d.Sched}}
	}
	for i := range s.pools {
		s.byName[s.pools[i].Service] = &s.pools[i]
	}
	ac := authConfigOf(d.Settings)
	auth, err := newAuthenticator(ac)
	if err != nil { // config validates the key type; keep serving API keys and HS256 regardless
		log.Error("JWT public key ignored", "err", err)
		ac.JWTPublicKey = nil
		auth, _ = newAuthenticator(ac)
	}
	s.auth = auth
	if s.pool(runners.ServiceVideo) != nil && d.Video != nil {
		s.video = s.newVideoService(d.Video)
	}
	s.engine = s.routes()
	return s
}

// Handler is the http.Handler serving every route.
func (s *Server) Handler() http.Handler { return s.engine }

// HTTPServer wraps the handler in an http.Server with timeouts that protect workers from slow
// clients without cutting off long uploads or streams.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		ConnState:         s.conns.track,
		ConnContext:       withConn,
		Addr:              addr,
		Handler:           s.engine,
		ReadHeaderTimeout: 10 * time.Second,
		// Uploads of up to MAX_AUDIO_SIZE_BYTES over a slow link; the body limit caps size,
		// BODY_STALL_TIMEOUT_SECONDS a body that stops arriving (bodystall.go).
		ReadTimeout:    bodyReadTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		// No WriteTimeout: streamed transcriptions last as long as the audio needs; each
		// request's own deadline (DEFAULT_INFERENCE_TIMEOUT_SECONDS) bounds the work instead.
	}
}

func (s *Server) routes() *gin.Engine {
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	r.Use(s.requestIDMiddleware(), s.accessLog(), s.recordMetrics(), s.recovery(), s.reserveGate(), s.bodyStall())
	// 404 and 405 in the envelope of the path's family: OpenAI's under /v1 (unmatched.go).
	r.NoRoute(s.noRoute)
	r.NoMethod(s.noMethod)

	authed := s.requireAuth()
	admin := s.requireAdmin()
	limited := s.rateLimit(dialectPython)
	deadline := s.requestDeadline(dialectPython)
	for _, p := range s.pools {
		switch p.Service {
		// Legacy paths speak the Python dialect only and carry deprecation headers (dialect.go);
		// their /v1 successors speak both dialects (openaiRoutes).
		case runners.ServiceImage:
			if route, ok := imageInputRouteFor(p.Runner); ok { // image-to-image and inpainting (image_edit.go)
				r.POST(route.legacy, deprecated(route.v1), authed, limited, deadline, s.limitBody(maxImageBody, dialectPython),
					s.inference(inferenceRoute{rule: &imageInputRule, successor: route.v1, handle: s.handleImages(&route, nil)}))
				continue
			}
			const v1 = "/v1/images/generations"
			r.POST("/image/generations", deprecated(v1), authed, limited, deadline, s.limitBody(maxJSONBody, dialectPython),
				s.inference(inferenceRoute{rule: &imageGenerationsRule, successor: v1, handle: s.handleImages(nil, nil)}))
		case runners.ServiceAudio:
			// AUDIO_TASK picks the legacy path, as HEAD mounts one of the two.
			task, path := taskTranscribe, "/audio/transcriptions"
			if s.cfg.AudioTask == taskTranslate {
				task, path = taskTranslate, "/audio/translations"
			}
			v1 := "/v1" + path
			r.POST(path, deprecated(v1), authed, limited, deadline, s.limitBody(s.maxAudioBody(), dialectPython),
				s.inference(inferenceRoute{rule: &audioRule, successor: v1, handle: s.handleAudio(task, nil)}))
		case runners.ServiceCNN:
			// CNN has no OpenAI counterpart: /v1 serves the Python dialect only.
			cnn := s.inference(inferenceRoute{handle: s.handleCNN})
			r.POST("/cnn/search-image", deprecated("/v1/cnn/search-image"), authed, limited, deadline,
				s.limitBody(maxImageBody, dialectPython), cnn)
			r.POST("/v1/cnn/search-image", authed, limited, deadline, s.limitBody(maxImageBody, dialectPython), cnn)
		case runners.ServiceTextToSpeech:
			s.speechRoutes(r, authed, limited, deadline) // speech.go
		}
	}
	if s.video != nil {
		s.videoRoutes(r, authed) // HEAD's and OpenAI's video routes (video*.go)
	}
	// /v1 images, audio and models: the OpenAI-compatible API (openai*.go).
	s.openaiRoutes(r.Group("/v1"))
	if s.metrics != nil && (s.cfg.EnableTelemetry || s.cfg.PrometheusEndpoint == "") { // hand-built settings: on
		h := gin.WrapH(s.metrics.Handler())
		path := s.cfg.PrometheusEndpoint // PROMETHEUS_ENDPOINT (HEAD), default /metrics
		if path == "" {
			path = "/metrics"
		}
		if s.cfg.MetricsAuth {
			r.GET(path, authed, h)
		} else {
			r.GET(path, h)
		}
	}
	r.GET("/tt-liveness", s.handleLiveness)
	r.GET("/health", s.handleHealth)
	r.POST("/tt-deep-reset", admin, s.handleDeepReset)
	r.POST("/tt-reset-device", admin, s.handleResetDevice)
	s.docsRoutes(r)
	return r
}

// pool returns the pool serving svc; routes are only mounted for pools that exist.
func (s *Server) pool(svc runners.Service) *Pool { return s.byName[svc] }
