package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/audioenc"
	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// workerInfo is one entry of /tt-liveness "worker_info", with the Python keys first.
type workerInfo struct {
	PID          *int     `json:"pid"`
	IsAlive      bool     `json:"is_alive"`
	StartTime    *float64 `json:"start_time"`
	IsReady      bool     `json:"is_ready"`
	RestartCount int      `json:"restart_count"`
	ErrorCount   int      `json:"error_count"`
	ReadyTime    *float64 `json:"ready_time"`
	State        string   `json:"state"`
	LastError    string   `json:"last_error,omitempty"`
	Devices      []int    `json:"devices"`
	// Progress is the running batch's steps as its runner last reported them (our
	// extension); absent when the worker is idle or its runner reports no steps.
	Progress *workerProgress `json:"progress,omitempty"`
}

// workerProgress is "step done of total" of a worker's running batch.
type workerProgress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

func unixSeconds(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	f := float64(t.UnixNano()) / 1e9
	return &f
}

// ready reports whether every pool has a warm worker.
func (s *Server) ready() bool {
	for _, p := range s.pools {
		if !p.Sched.Ready() {
			return false
		}
	}
	return s.videoReady()
}

func workerInfos(workers map[string]scheduler.WorkerStatus) map[string]workerInfo {
	info := make(map[string]workerInfo, len(workers))
	for id, w := range workers {
		wi := workerInfo{
			IsAlive: w.IsAlive, StartTime: unixSeconds(w.StartTime), IsReady: w.IsReady,
			RestartCount: w.RestartCount, ErrorCount: w.ErrorCount, ReadyTime: unixSeconds(w.ReadyTime),
			State: w.State, LastError: w.LastError, Devices: w.Devices,
		}
		if w.PID != 0 {
			pid := w.PID
			wi.PID = &pid
		}
		if w.StepsTotal > 0 {
			wi.Progress = &workerProgress{Done: w.StepsDone, Total: w.StepsTotal}
		}
		info[id] = wi
	}
	return info
}

// handleLiveness serves GET /tt-liveness: 200 with the status once every pool has a warm
// worker; 503 with the same body (and Retry-After) before that, so operators see what the
// workers are doing. With several pools (MODEL_POOLS) the top-level fields sum or merge them
// and "pools" has each one.
func (s *Server) handleLiveness(c *gin.Context) {
	snaps := s.poolSnapshots()
	var key []byte
	if len(snaps) == 1 { // an unchanged server answers its last bytes (livenesscache.go)
		buf := keyBufs.Get().(*[]byte)
		defer keyBufs.Put(buf)
		key = livenessKey(*buf, snaps[0])
		*buf = key
		if s.liveness.answer(c, key) {
			return
		}
	}
	resp := s.livenessResponse(snaps)
	status := http.StatusOK
	if resp.Detail != "" {
		status = http.StatusServiceUnavailable
	}
	body, err := encodeJSON(resp)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	if key != nil {
		s.liveness.store(key, status, body)
	}
	writeLiveness(c, status, body)
}

// writeLiveness writes a /tt-liveness answer: a 503 says when to come back.
func writeLiveness(c *gin.Context, status int, body []byte) {
	if status != http.StatusOK {
		setRetryAfter(c, 5*time.Second)
	}
	c.Data(status, "application/json", body)
}

// poolSnapshot is what /tt-liveness reports of one pool, read once.
type poolSnapshot struct {
	pool            *Pool
	workers         map[string]scheduler.WorkerStatus
	queue, capacity int
	ready           bool
	canary          scheduler.CanaryStatus
}

func (s *Server) poolSnapshots() []poolSnapshot {
	out := make([]poolSnapshot, len(s.pools))
	for i := range s.pools {
		p := &s.pools[i]
		out[i] = poolSnapshot{pool: p, workers: p.Sched.Workers(), queue: p.Sched.QueueLen(), capacity: p.Sched.QueueCap(),
			ready: p.Sched.Ready(), canary: p.Sched.Canary()}
	}
	return out
}

// livenessResponse builds /tt-liveness's body from the pools' snapshots: Detail is set when
// the answer is a 503.
func (s *Server) livenessResponse(snaps []poolSnapshot) livenessResponse {
	device := s.cfg.Device
	if device == "" {
		device = "Not defined"
	}
	var info map[string]workerInfo
	queue, capacity := 0, 0
	runnerInUse := ""
	var pools map[string]any
	if len(snaps) > 1 {
		pools = make(map[string]any, len(snaps))
	}
	ready := true
	canaries := make([]scheduler.CanaryStatus, 0, len(snaps))
	for i, sn := range snaps {
		wi := workerInfos(sn.workers)
		if len(snaps) == 1 {
			info = wi
		} else {
			if info == nil {
				info = map[string]workerInfo{}
			}
			for id, w := range wi {
				info[id] = w
			}
			pools[sn.pool.Runner] = gin.H{"service": sn.pool.Service, "model_ready": sn.ready, "queue_size": sn.queue,
				"max_queue_size": sn.capacity, "worker_info": wi, "canary_alive": sn.canary.Alive, "canary_state": sn.canary.State}
		}
		queue += sn.queue
		capacity += sn.capacity
		ready = ready && sn.ready
		canaries = append(canaries, sn.canary)
		if i > 0 {
			runnerInUse += ","
		}
		runnerInUse += sn.pool.Runner
	}
	if info == nil {
		info = map[string]workerInfo{}
	}
	canary := worstCanary(canaries)
	resp := livenessResponse{
		Status: "alive", ModelReady: ready, QueueSize: queue, MaxQueueSize: capacity,
		DeviceMeshShape: [2]int{s.cfg.DeviceMeshShape.Rows, s.cfg.DeviceMeshShape.Cols},
		Device:          device, WorkerInfo: info, RunnerInUse: runnerInUse,
		CanaryAlive: canary.Alive, CanaryState: canary.State, MockDevices: s.mock,
		ImageCodecs: imaging.Status(), Pools: pools,
	}
	if s.speech != nil {
		resp.SpeechFormats = audioenc.Available()
	}
	switch {
	case !ready:
		resp.Detail = "Model is not ready"
	case s.canaryGated(canary):
		resp.Detail = canaryNotServing
	}
	return resp
}

// canaryNotServing is HEAD's answer when CANARY_GATE_READINESS is on and the canary is dead.
const canaryNotServing = "Canary monitor: model not serving"

// canaryGated reports whether a dead canary makes the server not ready (CANARY_GATE_READINESS).
func (s *Server) canaryGated(st scheduler.CanaryStatus) bool {
	return s.cfg.Canary.GateReadiness && st.Enabled && !st.Alive
}

// canarySeverity orders canary states, worst last, to summarise several pools.
var canarySeverity = map[string]int{scheduler.CanaryDisabled: 0, scheduler.CanaryHealthy: 1, scheduler.CanaryStarting: 2,
	scheduler.CanaryProbing: 3, scheduler.CanarySuspect: 4, scheduler.CanaryDead: 5}

// canary is the pools' canary status: the worst state of them (one pool: its own); alive
// unless one is dead.
func (s *Server) canary() scheduler.CanaryStatus {
	all := make([]scheduler.CanaryStatus, len(s.pools))
	for i, p := range s.pools {
		all[i] = p.Sched.Canary()
	}
	return worstCanary(all)
}

// worstCanary summarises canary states: the worst of them; alive unless one is dead.
func worstCanary(all []scheduler.CanaryStatus) scheduler.CanaryStatus {
	out := scheduler.CanaryStatus{State: scheduler.CanaryDisabled, Alive: true}
	for _, cs := range all {
		out.Enabled = out.Enabled || cs.Enabled
		out.Alive = out.Alive && cs.Alive
		if canarySeverity[cs.State] > canarySeverity[out.State] {
			out.State = cs.State
		}
	}
	return out
}

// livenessResponse is /tt-liveness's body, in the Python server's key order.
type livenessResponse struct {
	Status          string                `json:"status"`
	ModelReady      bool                  `json:"model_ready"`
	QueueSize       int                   `json:"queue_size"`
	MaxQueueSize    int                   `json:"max_queue_size"`
	DeviceMeshShape [2]int                `json:"device_mesh_shape"`
	Device          string                `json:"device"`
	WorkerInfo      map[string]workerInfo `json:"worker_info"`
	RunnerInUse     string                `json:"runner_in_use"`
	CanaryAlive     bool                  `json:"canary_alive"`
	CanaryState     string                `json:"canary_state"`
	MockDevices     bool                  `json:"mock_devices"`
	ImageCodecs     imaging.CodecStatus   `json:"image_codecs"`
	// SpeechFormats are the audio formats the speech routes can encode now (with a speech pool).
	SpeechFormats []string       `json:"speech_formats,omitempty"`
	Pools         map[string]any `json:"pools,omitempty"`
	Detail        string         `json:"detail,omitempty"`
}

// handleHealth serves GET /health (vLLM-compatible): 200 {} when ready, 503 otherwise (also
// when CANARY_GATE_READINESS is on and the canary is dead).
func (s *Server) handleHealth(c *gin.Context) {
	detail := ""
	switch {
	case !s.ready():
		detail = "Model is not ready"
	case s.canaryGated(s.canary()):
		detail = canaryNotServing
	default:
		writeJSON(c, http.StatusOK, gin.H{})
		return
	}
	setRetryAfter(c, 5*time.Second)
	writeJSON(c, http.StatusServiceUnavailable, gin.H{"detail": detail})
}

// resetInfo is one worker's entry in the reset routes' answer (our extension): its state when
// the reset came, what was done (scheduler.Reset* actions) and that in words.
type resetInfo struct {
	State  string `json:"state"`
	Action string `json:"action"`
	Detail string `json:"detail"`
}

// resetDetails says each reset action in words.
var resetDetails = map[string]string{
	scheduler.ResetRestart:         "restarts after its current batch: device reset, new runner, warm-up",
	scheduler.ResetRevived:         "was failed; starts again: device reset, new runner, warm-up, with a new count of failures",
	scheduler.ResetAlreadyStarting: "already warming up or restarting; nothing more to do",
	scheduler.ResetNotStarted:      "not started yet (NEW_DEVICE_DELAY_SECONDS); it starts on its own",
	scheduler.ResetStopping:        "the server is shutting down; nothing started",
}

func resetInfos(rs []scheduler.WorkerReset, into map[string]resetInfo) {
	for _, r := range rs {
		into[r.Worker] = resetInfo{State: r.State, Action: r.Action, Detail: resetDetails[r.Action]}
	}
}

// handleDeepReset serves POST /tt-deep-reset: every worker is restarted (a failed one revived)
// in the background; the answer says what happened to each.
func (s *Server) handleDeepReset(c *gin.Context) {
	workers := map[string]resetInfo{}
	for _, p := range s.pools {
		resetInfos(p.Sched.RestartAll(), workers)
	}
	writeJSON(c, http.StatusOK, gin.H{"status": "Reset scheduled", "workers": workers})
}

// handleResetDevice serves POST /tt-reset-device?device_id=ID.
func (s *Server) handleResetDevice(c *gin.Context) {
	id, ok := c.GetQuery("device_id")
	if !ok {
		s.fail(c, dialectPython, &apiError{status: http.StatusUnprocessableEntity, items: []fieldError{{Type: "missing", Loc: []any{"query", "device_id"}, Msg: "Field required", Input: nil}}})
		return
	}
	var (
		r   scheduler.WorkerReset
		err error
	)
	for _, p := range s.pools {
		if r, err = p.Sched.RestartWorker(id); err == nil || !errors.Is(err, scheduler.ErrUnknownWorker) {
			break
		}
	}
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	workers := map[string]resetInfo{}
	resetInfos([]scheduler.WorkerReset{r}, workers)
	writeJSON(c, http.StatusOK, gin.H{"status": "Reset of device " + id + " scheduled", "workers": workers})
}
