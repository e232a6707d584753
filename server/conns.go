package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// connTracker knows every open connection of the HTTP server and what it is doing, for two
// jobs: a graceful stop closes the connections that never sent a request at once (Shutdown
// would wait up to 5 s for them: clients often dial spares they never use), and
// MAX_CONNECTIONS caps how many are open (see LimitListener).
type connTracker struct {
	mu    sync.Mutex
	conns map[net.Conn]*connInfo
	// reserved counts the open connections admitted into the health reserve (healthReserve
	// slots above MAX_CONNECTIONS, for the health and metrics routes only).
	reserved int

	max      int // MAX_CONNECTIONS (0: no cap)
	evicted  atomic.Int64
	refused  atomic.Int64
	lastWarn atomic.Int64 // unix nanos of the last "cap reached" log line
}

type connInfo struct {
	state    http.ConnState
	since    time.Time // when it entered state
	reserved bool      // admitted into the health reserve: health and metrics routes only
}

// healthReserve is how many connections beyond MAX_CONNECTIONS are admitted, when every
// connection at the cap is busy in a request, for the health and metrics routes only
// (/tt-liveness, /health, the Prometheus endpoint): a probe is answered at the cap instead of
// getting 503 and restarting a healthy pod. Any other request on such a connection is 503
// with Connection: close (or served, once a regular slot is free).
const healthReserve = 8

// track is the http.Server's ConnState hook.
func (t *connTracker) track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st == http.StateClosed || st == http.StateHijacked {
		t.forget(c)
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

// oldestIdle is the connection (of the health reserve, or regular) that has waited longest
// without a request in progress, or nil; t.mu is held.
func (t *connTracker) oldestIdle(reserved bool) net.Conn {
	var victim net.Conn
	var oldest time.Time
	for oc, ci := range t.conns {
		if ci.state == http.StateActive || ci.reserved != reserved {
			continue
		}
		if victim == nil || ci.since.Before(oldest) {
			victim, oldest = oc, ci.since
		}
	}
	return victim
}

// forget drops c (closed, hijacked or evicted); t.mu is held.
func (t *connTracker) forget(c net.Conn) {
	if ci := t.conns[c]; ci != nil && ci.reserved {
		t.reserved--
	}
	delete(t.conns, c)
}

// admit registers a just-accepted connection. At the cap it closes the connection that has
// waited longest without a request in progress (never sent one, or idle between keep-alive
// requests) to make room, so a flood of idle connections cannot lock out new clients — an
// operator's /tt-liveness, a health checker, a real request. When every open connection is
// in a request, the new one takes a slot of the health reserve if one is free (health and
// metrics routes only, see healthReserve); else admit reports false: the caller answers 503
// and closes it.
func (t *connTracker) admit(c net.Conn) bool {
	t.mu.Lock()
	if t.conns == nil {
		t.conns = map[net.Conn]*connInfo{}
	}
	var victim net.Conn
	reserved := false
	if t.max > 0 && len(t.conns)-t.reserved >= t.max {
		// A regular slot from the longest-idle regular connection; else a slot of the health
		// reserve, from its longest-idle connection when all are taken.
		if victim = t.oldestIdle(false); victim == nil {
			reserved = true
			if t.reserved >= healthReserve {
				if victim = t.oldestIdle(true); victim == nil {
					t.mu.Unlock()
					t.refused.Add(1)
					return false
				}
			}
		}
		if victim != nil {
			t.forget(victim)
			t.evicted.Add(1)
		}
	}
	if reserved {
		t.reserved++
	}
	t.conns[c] = &connInfo{state: http.StateNew, since: time.Now(), reserved: reserved}
	t.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
	return true
}

// mayServe reports whether a request that is not for a health route may be served on c: always
// on a regular connection; on one of the health reserve only once a regular slot is free (the
// connection then becomes regular).
func (t *connTracker) mayServe(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ci := t.conns[c]
	if ci == nil || !ci.reserved {
		return true
	}
	if len(t.conns)-t.reserved >= t.max {
		return false
	}
	ci.reserved = false
	t.reserved--
	return true
}

// closeFresh closes the connections that never sent a request.
func (t *connTracker) closeFresh() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, ci := range t.conns {
		if ci.state == http.StateNew {
			_ = c.Close()
			t.forget(c)
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

// connKey is the request-context key of the request's net.Conn (set by HTTPServer's
// ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// healthPath reports whether path is a health or metrics route (served on the health reserve).
func (s *Server) healthPath(path string) bool {
	switch path {
	case "/tt-liveness", "/health":
		return true
	}
	metrics := s.cfg.PrometheusEndpoint
	if metrics == "" {
		metrics = "/metrics"
	}
	return path == metrics
}

// reserveGate answers 503 (Connection: close) to a request that is not for a health route on a
// connection of the health reserve while MAX_CONNECTIONS regular connections are busy.
func (s *Server) reserveGate() gin.HandlerFunc {
	return func(c *gin.Context) {
		conn, _ := c.Request.Context().Value(connKey{}).(net.Conn)
		if conn == nil || s.conns.max <= 0 || s.healthPath(c.Request.URL.Path) || s.conns.mayServe(conn) {
			c.Next()
			return
		}
		c.Header("Connection", "close")
		// The unread body is not drained after the answer (net/http would wait for the rest of
		// an upload that may never come): the connection closes at once.
		_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now())
		d := dialectPython
		if isOpenAIPath(c.Request.URL.Path) {
			d = dialectOpenAI
		}
		s.fail(c, d, &apiError{status: http.StatusServiceUnavailable, retryAfter: time.Second,
			msg: "Too many open connections (MAX_CONNECTIONS); try again shortly"})
	}
}
