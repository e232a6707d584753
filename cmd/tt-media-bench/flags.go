package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/bench"
)

// loadFlags are the flags shared by run, compare and bare.
type loadFlags struct {
	url         string
	allowRemote bool
	token       string
	noAuth      bool
	headers     multiFlag

	kind         string
	path         string
	images       int
	guidance     float64
	steps        int
	poll         time.Duration
	audioSeconds float64
	stream       bool
	preprocess   string
	file         string
	words        int
	voice        string

	concurrency string
	rate        string
	arrival     string
	seed        uint64
	maxInFlight int

	duration       time.Duration
	requests       int
	warmup         time.Duration
	warmupRequests int
	timeout        time.Duration
	label          string
	serverMetrics  bool
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func (f *loadFlags) register(fs *flag.FlagSet, withLoad bool) {
	token := os.Getenv("API_KEY")
	if token == "" {
		token = "your-secret-key"
	}
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8000", "server root URL")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback target")
	fs.StringVar(&f.token, "token", token, "bearer token (API key or JWT; default $API_KEY or your-secret-key)")
	fs.BoolVar(&f.noAuth, "no-auth", false, "send no Authorization header")
	fs.Var(&f.headers, "header", `extra request header "Name: value" (repeatable)`)

	fs.StringVar(&f.kind, "kind", "image", "workload: image, audio, cnn, speech, liveness or video")
	fs.StringVar(&f.path, "path", "", "route override, e.g. /v1/images/generations")
	fs.IntVar(&f.images, "images", 1, "image: number_of_images per request (1..4)")
	fs.Float64Var(&f.guidance, "guidance-scale", 5, "image: guidance_scale")
	fs.IntVar(&f.steps, "steps", 0, "image or video: num_inference_steps (0: server default)")
	fs.DurationVar(&f.poll, "poll", 50*time.Millisecond, "video: job poll interval (queue wait and device time are measured to within it)")
	fs.Float64Var(&f.audioSeconds, "audio-seconds", 5, "audio: seconds of generated audio per request")
	fs.BoolVar(&f.stream, "stream", false, "audio: ask for NDJSON streaming and measure time to first chunk")
	fs.StringVar(&f.preprocess, "preprocess", "", "audio: is_preprocessing_enabled true|false (empty: server default)")
	fs.StringVar(&f.file, "file", "", "audio or cnn: send this file instead of generated input")
	fs.IntVar(&f.words, "words", 20, "speech: words of the text to speak (streamed pcm: time to first audio, real-time factor)")
	fs.StringVar(&f.voice, "voice", "alloy", "speech: voice")
	if !withLoad {
		return
	}
	fs.StringVar(&f.concurrency, "concurrency", "", "closed loop: comma-separated concurrencies to sweep, e.g. 1,2,4,8")
	fs.StringVar(&f.rate, "rate", "", "open loop: comma-separated arrival rates (requests/s) to sweep")
	fs.StringVar(&f.arrival, "arrival", "poisson", "open loop: poisson or constant")
	fs.Uint64Var(&f.seed, "seed", 1, "open loop: seed of the arrival process")
	fs.IntVar(&f.maxInFlight, "max-in-flight", 1024, "open loop: most requests in flight; later arrivals are dropped and counted")
	fs.DurationVar(&f.duration, "duration", 0, "measured phase length per run (with or instead of --requests)")
	fs.IntVar(&f.requests, "requests", 0, "measured requests per run (with or instead of --duration)")
	fs.DurationVar(&f.warmup, "warmup", 0, "unmeasured warm-up per run, by time")
	fs.IntVar(&f.warmupRequests, "warmup-requests", 0, "unmeasured warm-up per run, by request count")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "per-request timeout")
	fs.StringVar(&f.label, "label", "", "label prefix for the runs")
	fs.BoolVar(&f.serverMetrics, "server-metrics", false, "scrape GET /metrics around each run for the server's queue-wait vs device-time split")
}

func (f *loadFlags) workload() (*bench.Workload, error) {
	spec := bench.WorkloadSpec{
		Kind: bench.Kind(f.kind), Path: f.path, Stream: f.stream, File: f.file,
	}
	switch spec.Kind {
	case bench.KindImage:
		spec.Images, spec.GuidanceScale, spec.Steps = f.images, f.guidance, f.steps
	case bench.KindSpeech:
		spec.Words, spec.Voice = f.words, f.voice
	case bench.KindVideo:
		spec.Steps, spec.Poll = f.steps, f.poll
	case bench.KindAudio:
		if f.file == "" {
			spec.AudioSeconds = f.audioSeconds
		}
		if f.preprocess != "" {
			v, err := strconv.ParseBool(f.preprocess)
			if err != nil {
				return nil, fmt.Errorf("--preprocess: %w", err)
			}
			spec.Preprocess = &v
		}
	}
	return bench.NewWorkload(spec)
}

// base builds the config shared by every run of a sweep.
func (f *loadFlags) base() (bench.Config, error) {
	u, err := bench.CheckTarget(f.url, f.allowRemote)
	if err != nil {
		return bench.Config{}, err
	}
	w, err := f.workload()
	if err != nil {
		return bench.Config{}, err
	}
	h := http.Header{}
	for _, kv := range f.headers {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return bench.Config{}, fmt.Errorf("--header %q: want \"Name: value\"", kv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	cfg := bench.Config{
		BaseURL: u, Workload: w, Header: h, Token: f.token,
		Arrival: bench.Arrival(f.arrival), Seed: f.seed, MaxInFlight: f.maxInFlight,
		Duration: f.duration, Requests: f.requests, Warmup: f.warmup, WarmupRequests: f.warmupRequests,
		Timeout: f.timeout, ServerMetrics: f.serverMetrics,
	}
	if f.noAuth {
		cfg.Token = ""
	}
	return cfg, nil
}

// loads expands --concurrency / --rate into one config per run.
func (f *loadFlags) loads(base bench.Config) ([]bench.Config, error) {
	if (f.concurrency == "") == (f.rate == "") {
		return nil, fmt.Errorf("give exactly one of --concurrency (closed loop) or --rate (open loop)")
	}
	var out []bench.Config
	if f.concurrency != "" {
		for _, s := range strings.Split(f.concurrency, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("--concurrency: %q is not a positive integer", s)
			}
			c := base
			c.Concurrency = n
			c.Label = labelFor(f.label, "c="+strconv.Itoa(n))
			out = append(out, c)
		}
	} else {
		for _, s := range strings.Split(f.rate, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(r > 0) {
				return nil, fmt.Errorf("--rate: %q is not a positive number", s)
			}
			c := base
			c.Rate = r
			c.Label = labelFor(f.label, "rate="+strconv.FormatFloat(r, 'g', -1, 64))
			out = append(out, c)
		}
	}
	return out, nil
}

func labelFor(prefix, load string) string {
	if prefix == "" {
		return load
	}
	return prefix + " " + load
}
