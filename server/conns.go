package server

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connTracker knows every open connection of the HTTP server and what it is doing, for two
// jobs: a graceful stop closes the connections that never sent a request at once (Shutdown
// would wait up to 5 s for them: clients often dial spares they never use), and
// MAX_CONNECTIONS caps how many are open (see LimitListener).
type connTracker struct {
	mu    sync.Mutex
	conns map[net.Conn]*connInfo

	max      int // MAX_CONNECTIONS (0: no cap)
	evicted  atomic.Int64
	refused  atomic.Int64
	lastWarn atomic.Int64 // unix nanos of the last "cap reached" log line
}

type connInfo struct {
	state http.ConnState
	since time.Time // when it entered state
}

// track is the http.Server's ConnState hook.
func (t *connTracker) track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st == http.StateClosed || st == http.StateHijacked {
		delete(t.conns, c)
		return
	}
	if t.conns == nil {
		t.conns = map[net.Conn]*connInfo{}
	}
	ci := t.conns[c]
	if ci == nil {
		ci = &connInfo{}
		t.conns[c] = ci
	}
	ci.state, ci.since = st, time.Now()
}

// admit registers a just-accepted connection. At the cap it closes the connection that has
// waited longest without a request in progress (never sent one, or idle between keep-alive
// requests) to make room, so a flood of idle connections cannot lock out new clients — an
// operator's /tt-liveness, a health checker, a real request. When every open connection is
// in a request, it reports false: the caller answers 503 and closes the new one.
func (t *connTracker) admit(c net.Conn) bool {
	t.mu.Lock()
	if t.conns == nil {
		t.conns = map[net.Conn]*connInfo{}
	}
	var victim net.Conn
	if t.max > 0 && len(t.conns) >= t.max {
		var oldest time.Time
		for oc, ci := range t.conns {
			if ci.state == http.StateActive {
				continue
			}
			if victim == nil || ci.since.Before(oldest) {
				victim, oldest = oc, ci.since
			}
		}
		if victim == nil {
			t.mu.Unlock()
			t.refused.Add(1)
			return false
		}
		delete(t.conns, victim)
		t.evicted.Add(1)
	}
	t.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	t.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
	return true
}

// closeFresh closes the connections that never sent a request.
func (t *connTracker) closeFresh() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, ci := range t.conns {
		if ci.state == http.StateNew {
			_ = c.Close()
			delete(t.conns, c)
		}
	}
}

// CloseUnusedConns closes connections that never sent a request; call it after Shutdown began.
func (s *Server) CloseUnusedConns() { s.conns.closeFresh() }

// LimitListener wraps the server's listener with the MAX_CONNECTIONS cap (settings; 0: the
// listener unchanged). Unlike a listener that stops accepting at its cap (whose waiting
// clients, liveness probes included, hang in the kernel's backlog), it always accepts: at the
// cap the longest-idle connection is closed to make room, and when every connection is busy
// in a request the new one is answered 503 with Retry-After and closed. So open file
// descriptors stay bounded and /tt-liveness keeps answering under a connection flood.
func (s *Server) LimitListener(ln net.Listener) net.Listener {
	s.conns.max = s.cfg.MaxConnections
	if s.conns.max <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, s: s}
}

type limitListener struct {
	net.Listener
	s *Server
}

// busyResponse is what a connection over the cap gets when no idle one can make room.
const busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Length: 75\r\n\r\n" +
	`{"detail":"Too many open connections (MAX_CONNECTIONS); try again shortly"}`

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		t := &l.s.conns
		if t.admit(c) {
			if n := t.evicted.Load(); n > 0 {
				l.warn(n)
			}
			return c, nil
		}
		l.warn(t.evicted.Load())
		go func() {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte(busyResponse))
			_ = c.Close()
		}()
	}
}

// warn logs, at most every 10 s, that the cap is being enforced.
func (l *limitListener) warn(evicted int64) {
	t := &l.s.conns
	now := time.Now().UnixNano()
	last := t.lastWarn.Load()
	if now-last < int64(10*time.Second) || !t.lastWarn.CompareAndSwap(last, now) {
		return
	}
	l.s.log.Warn("MAX_CONNECTIONS reached: closing idle connections to admit new ones",
		"max_connections", t.max, "idle_closed_total", evicted, "refused_busy_total", t.refused.Load())
}
