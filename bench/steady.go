package bench

import "time"

// Steady is the throughput over the run's steady window: from the first successful
// completion (before it the pipeline was still filling from idle: the warm-up ramp) to the
// last send (after it the offered load stops and the in-flight requests drain). Requests and
// units count the completed requests whose answer ended inside the window, which is half open,
// (start, end]: the first completion marks the start and is not counted. For a steady process
// (constant or Poisson arrivals into N servers, or a closed loop) this is the service rate with
// neither the idle start nor the tail in it; because both bounds are events, it is within
// about one completion per server of the true count over the window.
type Steady struct {
	// StartS and EndS bound the window, in seconds from the run's first send.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Completed counts the 2xx answers that ended in the window; Sent the requests (of any
	// outcome) sent in it.
	Completed    int     `json:"completed"`
	Sent         int     `json:"sent"`
	RequestsPerS float64 `json:"requests_per_s"`
	// SentPerS is the load offered in the window (requests sent ÷ window), which an open-loop
	// run should match to its rate less the dropped arrivals.
	SentPerS  float64 `json:"sent_per_s"`
	Units     float64 `json:"units,omitempty"`
	UnitsPerS float64 `json:"units_per_s,omitempty"`
	// DeviceDone and DeviceDonePerS count, for video jobs, the completed jobs whose device work
	// (their last denoising step, seen by a poll) ended in the window (first such end, last
	// send]: the devices' throughput, without the encode that follows off the device (whose
	// time varies with the host's load and so blurs the completion rate).
	DeviceDone     int     `json:"device_done,omitempty"`
	DeviceDonePerS float64 `json:"device_done_per_s,omitempty"`
}

// Reasons a run has no steady window (Report.SteadyNote).
const (
	steadyNoCompletion = "no steady window: no request completed"
	steadyTooShort     = "no steady window: the last request was sent before the first one completed (run too short for its load)"
)

// steadyWindow computes the steady-state rates of samples, or says why there are none.
// Samples without a send time (the request could not be built) are ignored.
func steadyWindow(samples []sample) (*Steady, string) {
	var first, firstDone, lastSend time.Time
	for _, s := range samples {
		if s.sent.IsZero() {
			continue
		}
		if first.IsZero() || s.sent.Before(first) {
			first = s.sent
		}
		if s.sent.After(lastSend) {
			lastSend = s.sent
		}
		if done := s.sent.Add(s.latency); s.ok() && (firstDone.IsZero() || done.Before(firstDone)) {
			firstDone = done
		}
	}
	if firstDone.IsZero() {
		return nil, steadyNoCompletion
	}
	if !lastSend.After(firstDone) {
		return nil, steadyTooShort
	}
	st := &Steady{StartS: firstDone.Sub(first).Seconds(), EndS: lastSend.Sub(first).Seconds()}
	for _, s := range samples {
		if s.sent.IsZero() {
			continue
		}
		if s.sent.After(firstDone) && !s.sent.After(lastSend) {
			st.Sent++
		}
		if done := s.sent.Add(s.latency); s.ok() && done.After(firstDone) && !done.After(lastSend) {
			st.Completed++
			st.Units += s.units
		}
	}
	window := lastSend.Sub(firstDone).Seconds()
	st.RequestsPerS = float64(st.Completed) / window
	st.SentPerS = float64(st.Sent) / window
	st.UnitsPerS = st.Units / window
	st.DeviceDone, st.DeviceDonePerS = deviceDoneRate(samples, lastSend)
	return st, ""
}

// deviceDoneRate is the rate of video jobs' device-work ends (sent + latency − finish time)
// over (first such end, lastSend]; 0 when fewer than two ends precede lastSend.
func deviceDoneRate(samples []sample, lastSend time.Time) (int, float64) {
	var ends []time.Time
	for _, s := range samples {
		if s.ok() && s.hasFinish && !s.sent.IsZero() {
			ends = append(ends, s.sent.Add(s.latency-time.Duration(s.finishMs*float64(time.Millisecond))))
		}
	}
	var first time.Time
	for _, e := range ends {
		if first.IsZero() || e.Before(first) {
			first = e
		}
	}
	if first.IsZero() || !lastSend.After(first) {
		return 0, 0
	}
	n := 0
	for _, e := range ends {
		if e.After(first) && !e.After(lastSend) {
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return n, float64(n) / lastSend.Sub(first).Seconds()
}
