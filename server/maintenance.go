package server

import (
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"
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
}

func unixSeconds(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	f := float64(t.UnixNano()) / 1e9
	return &f
}

// handleLiveness serves GET /tt-liveness: 200 with the status once a worker is warm; 503 with
// the same body (and Retry-After) before that, so operators see what the workers are doing.
func (s *Server) handleLiveness(c *gin.Context) {
	workers := s.sched.Workers()
	info := make(map[string]workerInfo, len(workers))
	ids := make([]string, 0, len(workers))
	for id, w := range workers {
		ids = append(ids, id)
		wi := workerInfo{
			IsAlive: w.IsAlive, StartTime: unixSeconds(w.StartTime), IsReady: w.IsReady,
			RestartCount: w.RestartCount, ErrorCount: w.ErrorCount, ReadyTime: unixSeconds(w.ReadyTime),
			State: w.State, LastError: w.LastError, Devices: w.Devices,
		}
		if w.PID != 0 {
			pid := w.PID
			wi.PID = &pid
		}
		info[id] = wi
	}
	sort.Strings(ids)
	device := s.cfg.Device
	if device == "" {
		device = "Not defined"
	}
	ready := s.sched.Ready()
	resp := gin.H{
		"status":            "alive",
		"model_ready":       ready,
		"queue_size":        s.sched.QueueLen(),
		"max_queue_size":    s.sched.QueueCap(),
		"device_mesh_shape": []int{s.cfg.DeviceMeshShape.Rows, s.cfg.DeviceMeshShape.Cols},
		"device":            device,
		"worker_info":       info,
		"runner_in_use":     s.cfg.ModelRunner,
		"mock_devices":      s.mock,
	}
	if !ready {
		resp["detail"] = "Model is not ready"
		setRetryAfter(c, 5*time.Second)
		writeJSON(c, http.StatusServiceUnavailable, resp)
		return
	}
	writeJSON(c, http.StatusOK, resp)
}

// handleHealth serves GET /health (vLLM-compatible): 200 {} when ready, 503 otherwise.
func (s *Server) handleHealth(c *gin.Context) {
	if !s.sched.Ready() {
		setRetryAfter(c, 5*time.Second)
		writeJSON(c, http.StatusServiceUnavailable, gin.H{"detail": "Model is not ready"})
		return
	}
	writeJSON(c, http.StatusOK, gin.H{})
}

// handleDeepReset serves POST /tt-deep-reset: every worker is restarted in the background.
func (s *Server) handleDeepReset(c *gin.Context) {
	go s.reset()
	writeJSON(c, http.StatusOK, gin.H{"status": "Reset scheduled"})
}

// handleResetDevice serves POST /tt-reset-device?device_id=ID.
func (s *Server) handleResetDevice(c *gin.Context) {
	id, ok := c.GetQuery("device_id")
	if !ok {
		s.fail(c, &validationError{items: []fieldError{{Type: "missing", Loc: []any{"query", "device_id"}, Msg: "Field required", Input: nil}}})
		return
	}
	if err := s.sched.RestartWorker(id); err != nil {
		s.fail(c, err)
		return
	}
	writeJSON(c, http.StatusOK, gin.H{"status": "Reset of device " + id + " scheduled"})
}
