package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

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
	return true
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
	device := s.cfg.Device
	if device == "" {
		device = "Not defined"
	}
	info := map[string]workerInfo{}
	queue, capacity := 0, 0
	runnerNames := make([]string, 0, len(s.pools))
	pools := map[string]any{}
	for _, p := range s.pools {
		wi := workerInfos(p.Sched.Workers())
		for id, w := range wi {
			info[id] = w
		}
		queue += p.Sched.QueueLen()
		capacity += p.Sched.QueueCap()
		runnerNames = append(runnerNames, p.Runner)
		cs := p.Sched.Canary()
		pools[p.Runner] = gin.H{"service": p.Service, "model_ready": p.Sched.Ready(), "queue_size": p.Sched.QueueLen(),
			"max_queue_size": p.Sched.QueueCap(), "worker_info": wi, "canary_alive": cs.Alive, "canary_state": cs.State}
	}
	ready := s.ready()
	canary := s.canary()
	resp := livenessResponse{
		Status: "alive", ModelReady: ready, QueueSize: queue, MaxQueueSize: capacity,
		DeviceMeshShape: [2]int{s.cfg.DeviceMeshShape.Rows, s.cfg.DeviceMeshShape.Cols},
		Device:          device, WorkerInfo: info, RunnerInUse: strings.Join(runnerNames, ","),
		CanaryAlive: canary.Alive, CanaryState: canary.State, MockDevices: s.mock,
		ImageCodecs: imaging.Status(),
	}
	if len(s.pools) > 1 {
		resp.Pools = pools
	}
	switch {
	case !ready:
		resp.Detail = "Model is not ready"
	case s.canaryGated(canary):
		resp.Detail = canaryNotServing
	default:
		writeJSON(c, http.StatusOK, resp)
		return
	}
	setRetryAfter(c, 5*time.Second)
	writeJSON(c, http.StatusServiceUnavailable, resp)
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
	out := scheduler.CanaryStatus{State: scheduler.CanaryDisabled, Alive: true}
	for _, p := range s.pools {
		cs := p.Sched.Canary()
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
	Pools           map[string]any        `json:"pools,omitempty"`
	Detail          string                `json:"detail,omitempty"`
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
