package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one run.
type Config struct {
	// Label names the run in reports (default: mode and load).
	Label string
	// BaseURL is the server root, already checked with CheckTarget.
	BaseURL  *url.URL
	Workload *Workload
	// Client sends every request; nil means NewClient(Concurrency or MaxInFlight).
	Client *http.Client
	// Token is sent as "Authorization: Bearer <Token>" on routes that need auth ("" = none).
	Token string
	// Header is added to every request.
	Header http.Header

	// Concurrency > 0 runs closed loop: that many requests always in flight.
	Concurrency int
	// Rate > 0 runs open loop: requests start at Arrival times at Rate per second, whether or
	// not earlier ones have finished, up to MaxInFlight at once (arrivals beyond it are
	// counted as Dropped, not queued, so the offered load stays honest).
	Rate        float64
	Arrival     Arrival
	Seed        uint64
	MaxInFlight int

	// Duration and Requests bound the measured phase (either or both; at least one).
	Duration time.Duration
	Requests int
	// Warmup and WarmupRequests bound an unmeasured phase run first with the same load.
	Warmup         time.Duration
	WarmupRequests int
	// Timeout bounds each request (0: none).
	Timeout time.Duration
	// ServerMetrics scrapes GET /metrics before and after the measured phase and reports the
	// server's queue-wait versus device-time split (Report.Server).
	ServerMetrics bool
}

// NewClient returns a client whose transport keeps up to conns idle connections to one
// host, so closed-loop runs reuse connections instead of churning them.
func NewClient(conns int) *http.Client {
	conns = max(conns, 2)
	t := &http.Transport{
		Proxy:               nil, // loopback benchmarks never go through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: t}
}

func (c *Config) validate() error {
	switch {
	case c.BaseURL == nil:
		return fmt.Errorf("%w: no target URL", ErrConfig)
	case c.Workload == nil:
		return fmt.Errorf("%w: no workload", ErrConfig)
	case c.Concurrency > 0 && c.Rate > 0:
		return fmt.Errorf("%w: give a concurrency (closed loop) or a rate (open loop), not both", ErrConfig)
	case c.Concurrency <= 0 && !(c.Rate > 0):
		return fmt.Errorf("%w: need a concurrency > 0 or a rate > 0", ErrConfig)
	case c.Duration <= 0 && c.Requests <= 0:
		return fmt.Errorf("%w: need a duration or a request count", ErrConfig)
	case c.Duration < 0 || c.Requests < 0 || c.Warmup < 0 || c.WarmupRequests < 0 || c.Timeout < 0:
		return fmt.Errorf("%w: negative bound", ErrConfig)
	}
	return nil
}

// sample is one request's outcome.
type sample struct {
	status  int       // HTTP status; 0 for a transport error
	sent    time.Time // when the request was handed to the client (zero: never sent)
	errKind string    // transport error class, or "stream_error:<code>"
	errMsg  string
	latency time.Duration
	ttfc    time.Duration // -1 when no chunk arrived or the request was not a stream
	units   float64
	// queueMs and deviceMs are the server's X-Queue-Time-Ms and X-Device-Time-Ms headers,
	// valid when hasQueue / hasDevice (streams, errors and other servers carry none).
	queueMs, deviceMs   float64
	hasQueue, hasDevice bool
	// finishMs is a video job's last denoising step → completed (followJob), valid when hasFinish.
	finishMs  float64
	hasFinish bool
}

func (s sample) ok() bool { return s.errKind == "" && s.status >= 200 && s.status < 300 }

// Run performs the warm-up (if any) and the measured phase, and reports the latter.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(max(cfg.Concurrency, cfg.MaxInFlight, 64))
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.Arrival == "" {
		cfg.Arrival = ArrivalPoisson
	}
	if cfg.Warmup > 0 || cfg.WarmupRequests > 0 {
		if _, _, err := phase(ctx, &cfg, cfg.Warmup, cfg.WarmupRequests, "warmup"); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	var before map[string]float64
	var scrapeErr error
	if cfg.ServerMetrics {
		before, scrapeErr = scrapeMetrics(ctx, &cfg)
	}
	started := time.Now()
	samples, dropped, err := phase(ctx, &cfg, cfg.Duration, cfg.Requests, "run")
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(started)
	rep := buildReport(&cfg, samples, dropped, started, elapsed)
	if cfg.ServerMetrics {
		var after map[string]float64
		if scrapeErr == nil {
			after, scrapeErr = scrapeMetrics(ctx, &cfg)
		}
		if scrapeErr != nil {
			rep.ServerError = scrapeErr.Error()
		} else {
			rep.Server = serverTiming(before, after)
		}
	}
	return rep, ctx.Err()
}

// phase runs one bounded stretch of load and returns its samples and (open loop) the
// arrivals dropped because MaxInFlight requests were already in flight.
func phase(ctx context.Context, cfg *Config, dur time.Duration, n int, tag string) ([]sample, int, error) {
	var end time.Time
	if dur > 0 {
		end = time.Now().Add(dur)
	}
	if cfg.Concurrency > 0 {
		return closedLoop(ctx, cfg, end, n, tag), 0, nil
	}
	return openLoop(ctx, cfg, dur, n, tag)
}

func closedLoop(ctx context.Context, cfg *Config, end time.Time, n int, tag string) []sample {
	var issued atomic.Int64
	per := make([][]sample, cfg.Concurrency)
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				if !end.IsZero() && !time.Now().Before(end) {
					return
				}
				i := int(issued.Add(1) - 1)
				if n > 0 && i >= n {
					return
				}
				per[w] = append(per[w], do(ctx, cfg, i, tag))
			}
		})
	}
	wg.Wait()
	var out []sample
	for _, s := range per {
		out = append(out, s...)
	}
	return out
}

func openLoop(ctx context.Context, cfg *Config, dur time.Duration, n int, tag string) ([]sample, int, error) {
	arr, err := NewArrivals(cfg.Arrival, cfg.Rate, cfg.Seed)
	if err != nil {
		return nil, 0, err
	}
	var (
		mu  sync.Mutex
		out []sample
		wg  sync.WaitGroup
	)
	dropped := arrivalLoop(ctx, wallClock{}, arr, dur, n, cfg.MaxInFlight, func(i int, release func()) {
		wg.Go(func() {
			s := do(ctx, cfg, i, tag)
			release()
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
		})
	})
	wg.Wait()
	return out, dropped, nil
}

// clock is the open-loop scheduler's time source: the wall clock in runs, a fake in tests.
type clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done.
	Sleep(ctx context.Context, d time.Duration)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// arrivalLoop is the open-loop scheduler: at each arrival offset of arr (from the loop's
// start, by clk) it starts request i by calling start(i, release), which must not block and
// must call release once the request has ended. An arrival that finds maxInFlight requests
// unreleased is dropped (counted, never queued: the offered load stays the process's). A
// late arrival (the loop fell behind) starts at once, so the count offered is kept. It stops
// at the first arrival at or after dur (when dur > 0), after n starts or drops (when n > 0),
// or when ctx is done, and returns the number dropped.
func arrivalLoop(ctx context.Context, clk clock, arr *Arrivals, dur time.Duration, n, maxInFlight int, start func(i int, release func())) int {
	slots := make(chan struct{}, max(maxInFlight, 1))
	release := func() { <-slots }
	dropped := 0
	t0 := clk.Now()
	for i := 0; n <= 0 || i < n; i++ {
		at := arr.Next()
		if dur > 0 && at >= dur {
			break
		}
		if wait := t0.Add(at).Sub(clk.Now()); wait > 0 {
			clk.Sleep(ctx, wait)
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
			start(i, release)
		default:
			dropped++
		}
	}
	return dropped
}

// do sends request i and measures it.
func do(ctx context.Context, cfg *Config, i int, tag string) sample {
	w := cfg.Workload
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	var body io.Reader
	if b := w.Body(i); b != nil {
		body = bytes.NewReader(b)
	}
	u := cfg.BaseURL.JoinPath(w.Path)
	req, err := http.NewRequestWithContext(ctx, w.Method, u.String(), body)
	if err != nil {
		return sample{errKind: "error:request", errMsg: err.Error(), ttfc: -1}
	}
	for k, vs := range cfg.Header {
		req.Header[k] = vs
	}
	if w.ContentType != "" {
		req.Header.Set("Content-Type", w.ContentType)
	}
	if w.Auth && cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	req.Header.Set("X-Request-Id", "bench-"+tag+"-"+strconv.Itoa(i))

	start := time.Now()
	s := sample{ttfc: -1, sent: start}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		s.latency = time.Since(start)
		s.errKind, s.errMsg = classify(err), err.Error()
		return s
	}
	defer resp.Body.Close()
	s.status = resp.StatusCode
	s.queueMs, s.hasQueue = headerMs(resp.Header, HeaderQueueTime)
	s.deviceMs, s.hasDevice = headerMs(resp.Header, HeaderDeviceTime)
	switch {
	case w.Spec.Kind == KindSpeech && resp.StatusCode == http.StatusOK:
		readAudio(resp.Body, start, &s)
	case w.Spec.Stream && resp.StatusCode == http.StatusOK:
		readStream(resp.Body, start, &s)
	default:
		data, err := io.ReadAll(resp.Body)
		s.latency = time.Since(start)
		if err != nil {
			s.errKind, s.errMsg = classify(err), err.Error()
			return s
		}
		if w.job && s.status == http.StatusAccepted {
			followJob(ctx, cfg, data, start, &s)
			return s
		}
		if s.ok() {
			s.units = w.Units(data)
			if s.units == 0 && w.UnitName == "audio_s" {
				s.units = unitsFromDuration(data)
			}
		}
	}
	return s
}

// Response headers in which the server reports, for answers whose jobs finished before the
// first byte (all but streams), the request's queue wait and device time in milliseconds.
const (
	HeaderQueueTime  = "X-Queue-Time-Ms"
	HeaderDeviceTime = "X-Device-Time-Ms"
)

// headerMs reads a finite, non-negative millisecond count from header name; false when the
// header is absent or not such a number.
func headerMs(h http.Header, name string) (float64, bool) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}

// readStream reads NDJSON lines: the first line's arrival is the time to first chunk, a
// {"detail", "status_code"} line is a mid-stream failure, and the last line with a
// "duration" (the final transcription) gives the audio seconds.
func readStream(r io.Reader, start time.Time, s *sample) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if s.ttfc < 0 {
				s.ttfc = time.Since(start)
			}
			var e struct {
				Detail     any  `json:"detail"`
				StatusCode *int `json:"status_code"`
			}
			if json.Unmarshal(line, &e) == nil && e.StatusCode != nil && e.Detail != nil {
				s.errKind = "stream_error:" + strconv.Itoa(*e.StatusCode)
				s.errMsg = fmt.Sprint(e.Detail)
			} else if u := unitsFromDuration(line); u > 0 {
				s.units = u
			}
		}
		if err != nil {
			s.latency = time.Since(start)
			if !errors.Is(err, io.EOF) {
				s.errKind, s.errMsg = classify(err), err.Error()
			}
			return
		}
	}
}

// classify names a transport error for the status table.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "error:timeout"
	case errors.Is(err, context.Canceled):
		return "error:canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "error:timeout"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "error:eof"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return "error:connect"
	}
	return "error:transport"
}
