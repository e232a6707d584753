// Package metrics defines the server's Prometheus metrics: HTTP requests, queue wait versus
// device time per model and worker (Triton's split), media units produced, admission
// rejections, cancellations by stage, steps run after a cancel, worker states and restarts,
// and Go runtime metrics, on a registry of its own.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

const namespace = "tt_media_server"

// Source is what the metrics read from a model's scheduler at scrape time.
type Source interface {
	Stats() scheduler.Stats
	Workers() map[string]scheduler.WorkerStatus
	QueueLen() int
	QueueCap() int
}

// Metrics holds the collectors of one process.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	queueWait    *prometheus.HistogramVec
	deviceTime   *prometheus.HistogramVec
	jobs         *prometheus.CounterVec
	images       *prometheus.CounterVec
	audioSeconds *prometheus.CounterVec
	rtf          *prometheus.HistogramVec
	steps        *prometheus.CounterVec
	cancelSteps  *prometheus.HistogramVec
	cancelFree   *prometheus.HistogramVec
	clients      *prometheus.CounterVec
	sources      *sourceSet
	canary       *canaryMetrics
}

// latencyBuckets span 1 ms to ~10 min: from a ResNet batch to a long SD3.5 generation.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.001, 600, 20)

// New registers every collector.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "requests_total",
			Help: "HTTP requests by route, method and status code."}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "request_duration_seconds",
			Help: "HTTP request duration by route.", Buckets: latencyBuckets}, []string{"route"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "queue_wait_seconds",
			Help: "Time jobs waited in the queue before a worker took them.", Buckets: latencyBuckets}, []string{"model"}),
		deviceTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "device_seconds",
			Help: "Time a worker spent running the batch a job was in.", Buckets: latencyBuckets}, []string{"model", "worker"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "jobs_total",
			Help: "Jobs that reached a worker, by outcome (ok, error, cancelled)."}, []string{"model", "worker", "outcome"}),
		images: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "images_generated_total",
			Help: "Images generated."}, []string{"model"}),
		audioSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "audio_seconds_transcribed_total",
			Help: "Seconds of audio transcribed."}, []string{"model"}),
		rtf: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "transcription_real_time_factor",
			Help: "Processing time divided by audio duration, per transcription.", Buckets: prometheus.ExponentialBucketsRange(0.001, 10, 16)}, []string{"model"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "denoising_steps_total",
			Help: "Denoising steps run (rate() gives steps per second)."}, []string{"model"}),
	}
	m.cancelSteps = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "steps_after_cancel",
		Help:    "Denoising steps a runner ran on a job after it was cancelled, before the device was free (at most 1: it stops at the next step).",
		Buckets: []float64{0, 1, 2, 4, 8, 16, 32, 64}}, []string{"model", "worker"})
	m.cancelFree = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "cancel_free_seconds",
		Help: "Time from a running job's cancellation to its device being free.", Buckets: latencyBuckets}, []string{"model", "worker"})
	m.clients = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "client_requests_total",
		Help: "Authenticated requests by client (API key name; all JWT callers count as \"jwt\") and status class."}, []string{"client", "class"})
	m.sources = &sourceSet{}
	m.canary = newCanaryMetrics(reg)
	reg.MustRegister(m.clients, m.requests, m.duration, m.queueWait, m.deviceTime, m.jobs, m.images, m.audioSeconds, m.rtf, m.steps, m.cancelSteps, m.cancelFree, m.sources)
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request records one HTTP request; route is the matched route pattern, not the raw path.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, statusLabel(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// ClientRequest counts one authenticated request of client (a configured key name or "jwt",
// so the label set stays as small as the key list) with its status class ("2xx", "4xx", ...).
func (m *Metrics) ClientRequest(client string, status int) {
	m.clients.WithLabelValues(client, classLabel(status)).Inc()
}

// statusLabels holds "100" … "599", so labelling a request's status allocates nothing.
var statusLabels = func() (l [500]string) {
	for i := range l {
		l[i] = strconv.Itoa(100 + i)
	}
	return l
}()

func statusLabel(code int) string {
	if code >= 100 && code < 600 {
		return statusLabels[code-100]
	}
	return strconv.Itoa(code)
}

// classLabel is the status class: "2xx", "4xx", ...
func classLabel(code int) string {
	if code >= 100 && code < 600 {
		return [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}[code/100-1]
	}
	return strconv.Itoa(code/100) + "xx"
}

// JobDone records a job that reached a worker (the scheduler's hook).
func (m *Metrics) JobDone(model, worker string, wait, device time.Duration, outcome string) {
	m.queueWait.WithLabelValues(model).Observe(wait.Seconds())
	m.deviceTime.WithLabelValues(model, worker).Observe(device.Seconds())
	m.jobs.WithLabelValues(model, worker, outcome).Inc()
}

// CancelFreed records a job cancelled while it ran (the scheduler's OnCancelFreed hook): the
// steps its runner ran after the cancellation and the time until the device was free.
func (m *Metrics) CancelFreed(model, worker string, stepsAfter int, after time.Duration) {
	m.cancelSteps.WithLabelValues(model, worker).Observe(float64(stepsAfter))
	m.cancelFree.WithLabelValues(model, worker).Observe(after.Seconds())
}

// Images counts generated images and their denoising steps.
func (m *Metrics) Images(model string, n, steps int) {
	m.images.WithLabelValues(model).Add(float64(n))
	m.steps.WithLabelValues(model).Add(float64(n * steps))
}

// Transcribed counts transcribed audio and its real-time factor.
func (m *Metrics) Transcribed(model string, audioSeconds float64, took time.Duration) {
	m.audioSeconds.WithLabelValues(model).Add(audioSeconds)
	if audioSeconds > 0 {
		m.rtf.WithLabelValues(model).Observe(took.Seconds() / audioSeconds)
	}
}

// AddSource exports a model's scheduler counters and worker states, read at scrape time.
func (m *Metrics) AddSource(model string, src Source) {
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	m.sources.list = append(m.sources.list, sourceCollector{model: model, src: src})
}

// sourceSet is the one collector over every model's scheduler.
type sourceSet struct {
	mu   sync.Mutex
	list []sourceCollector
}

func (s *sourceSet) Describe(ch chan<- *prometheus.Desc) { (&sourceCollector{}).Describe(ch) }

func (s *sourceSet) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	list := append([]sourceCollector(nil), s.list...)
	s.mu.Unlock()
	for i := range list {
		list[i].Collect(ch)
	}
}

var (
	queueDepthDesc = prometheus.NewDesc(namespace+"_queue_depth", "Jobs waiting in the queue.", []string{"model"}, nil)
	queueCapDesc   = prometheus.NewDesc(namespace+"_queue_capacity", "MAX_QUEUE_SIZE.", []string{"model"}, nil)
	rejectedDesc   = prometheus.NewDesc(namespace+"_rejections_total", "Requests refused at admission, by reason.", []string{"model", "reason"}, nil)
	cancelledDesc  = prometheus.NewDesc(namespace+"_cancellations_total", "Jobs ended by client disconnect or deadline, by stage and cause.", []string{"model", "stage", "cause"}, nil)
	workerDesc     = prometheus.NewDesc(namespace+"_worker_state", "1 for the state each worker is in.", []string{"model", "worker", "state"}, nil)
	restartsDesc   = prometheus.NewDesc(namespace+"_worker_restarts_total", "Worker restarts (warm-up failures, crashes, resets).", []string{"model", "worker"}, nil)
	errorsDesc     = prometheus.NewDesc(namespace+"_worker_errors_total", "Worker errors (failed warm-ups, crashes, failed jobs).", []string{"model", "worker"}, nil)
	admittedDesc   = prometheus.NewDesc(namespace+"_admitted_total", "Requests admitted to the queue.", []string{"model"}, nil)
	drainDesc      = prometheus.NewDesc(namespace+"_drain_rate", "Measured throughput of the ready workers, in cost units per second (steps, audio seconds, images).", []string{"model"}, nil)
)

// workerStates are the states a worker can be in (see docs/OPERATIONS.md).
var workerStates = []string{"pending", "starting", "ready", "stuck", "restarting", "failed", "stopped"}

type sourceCollector struct {
	model string
	src   Source
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueDepthDesc, queueCapDesc, admittedDesc, rejectedDesc, cancelledDesc, workerDesc, restartsDesc, errorsDesc, drainDesc} {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{c.model}, labels...)...)
	}
	cnt := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{c.model}, labels...)...)
	}
	g(queueDepthDesc, float64(c.src.QueueLen()))
	g(queueCapDesc, float64(c.src.QueueCap()))
	g(drainDesc, st.DrainRate)
	cnt(admittedDesc, st.Accepted)
	cnt(rejectedDesc, st.RejectedFull, "queue_full")
	cnt(rejectedDesc, st.RejectedDeadline, "deadline")
	cnt(rejectedDesc, st.RejectedNotReady, "not_ready")
	cnt(rejectedDesc, st.RejectedStopping, "shutting_down")
	cnt(cancelledDesc, st.CancelledQueued, "queued", "client")
	cnt(cancelledDesc, st.CancelledRunning, "running", "client")
	cnt(cancelledDesc, st.TimeoutQueued, "queued", "deadline")
	cnt(cancelledDesc, st.TimeoutRunning, "running", "deadline")
	for id, w := range c.src.Workers() {
		for _, s := range workerStates {
			v := 0.0
			if w.State == s {
				v = 1
			}
			g(workerDesc, v, id, s)
		}
		cnt(restartsDesc, int64(w.RestartCount), id)
		cnt(errorsDesc, int64(w.ErrorCount), id)
	}
}
