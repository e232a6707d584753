package server

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

const (
	idempotencyHeader = "Idempotency-Key"
	maxIdempotencyKey = 255
	// idempotencyTTL is how long a finished answer is kept for retries.
	idempotencyTTL = 5 * time.Minute
	// maxIdempotentEntries and maxIdempotentBytes bound the memory kept for replays.
	maxIdempotentEntries = 1024
	maxIdempotentBytes   = 256 << 20
	// maxReplayBody: larger answers are not kept (the retry then runs again).
	maxReplayBody = 32 << 20
)

// idemEntry is one Idempotency-Key's request and, once finished, its answer.
type idemEntry struct {
	hash     [32]byte
	done     chan struct{} // closed when the answer is recorded (or dropped)
	status   int
	ctype    string
	body     []byte
	kept     bool // the answer is stored for replay
	finished time.Time
}

// idempotencyStore remembers recent Idempotency-Keys per client, so that a retried request
// attaches to the job already running, or gets its stored answer, instead of booking the
// device twice.
type idempotencyStore struct {
	mu      sync.Mutex
	entries map[string]*idemEntry
	order   []string // insertion order, for eviction
	bytes   int
	now     func() time.Time
}

func newIdempotencyStore() *idempotencyStore {
	return &idempotencyStore{entries: map[string]*idemEntry{}, now: time.Now}
}

// begin returns the entry for key and whether the caller owns it (must run the request).
func (st *idempotencyStore) begin(key string, hash [32]byte) (e *idemEntry, owner bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expireLocked()
	if e, ok := st.entries[key]; ok {
		return e, false
	}
	e = &idemEntry{hash: hash, done: make(chan struct{})}
	st.entries[key] = e
	st.order = append(st.order, key)
	st.evictLocked()
	return e, true
}

// finish records the answer of an owned entry. Answers a retry should not replay (server
// busy, not ready, internal errors) are dropped so that the retry runs afresh.
func (st *idempotencyStore) finish(key string, e *idemEntry, status int, ctype string, body []byte, complete bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	retryable := status == http.StatusTooManyRequests || status >= 500
	if !complete || retryable || len(body) > maxReplayBody {
		if st.entries[key] == e {
			delete(st.entries, key)
		}
	} else {
		e.status, e.ctype, e.body, e.kept = status, ctype, body, true
		st.bytes += len(body)
	}
	e.finished = st.now()
	close(e.done)
	st.evictLocked()
}

func (st *idempotencyStore) expireLocked() {
	now := st.now()
	for k, e := range st.entries {
		if !e.finished.IsZero() && now.Sub(e.finished) > idempotencyTTL {
			st.dropLocked(k, e)
		}
	}
}

// evictLocked drops the oldest finished entries while over the bounds.
func (st *idempotencyStore) evictLocked() {
	for i := 0; i < len(st.order) && (len(st.entries) > maxIdempotentEntries || st.bytes > maxIdempotentBytes); {
		k := st.order[i]
		e, ok := st.entries[k]
		if ok && e.finished.IsZero() {
			i++ // still running: keep
			continue
		}
		if ok {
			st.dropLocked(k, e)
		}
		st.order = append(st.order[:i], st.order[i+1:]...)
	}
	if len(st.order) > 4*maxIdempotentEntries { // compact keys already dropped
		live := st.order[:0]
		for _, k := range st.order {
			if _, ok := st.entries[k]; ok {
				live = append(live, k)
			}
		}
		st.order = live
	}
}

func (st *idempotencyStore) dropLocked(k string, e *idemEntry) {
	if e.kept {
		st.bytes -= len(e.body)
	}
	delete(st.entries, k)
}

// captureWriter tees what a handler writes so it can be replayed.
type captureWriter struct {
	gin.ResponseWriter
	buf      bytes.Buffer
	overflow bool
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if !w.overflow {
		if w.buf.Len()+len(b) > maxReplayBody {
			w.overflow = true
			w.buf.Reset()
		} else {
			w.buf.Write(b)
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// idempotent implements the Idempotency-Key header on an inference route around run (the
// route's handler, given the body it hashes): same key and body → the same answer from one run;
// same key, different body → 409. Its own errors are answered in envelope d.
func (s *Server) idempotent(c *gin.Context, d dialect, body []byte, run func()) {
	key := c.GetHeader(idempotencyHeader)
	if key == "" {
		run()
		return
	}
	if len(key) > maxIdempotencyKey {
		s.fail(c, d, httpErr(http.StatusBadRequest, "header %s is longer than %d characters", idempotencyHeader, maxIdempotencyKey))
		return
	}
	h := sha256.New()
	io.WriteString(h, c.Request.Method+" "+c.FullPath()+"\n"+c.ContentType()+"\n") //nolint:errcheck // hash writes cannot fail
	h.Write(body)
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	client, _ := clientFrom(c)
	fullKey := client + "\x00" + c.FullPath() + "\x00" + key

	e, owner := s.idem.begin(fullKey, sum)
	if !owner {
		if e.hash != sum {
			s.fail(c, d, httpErr(http.StatusConflict, "%s %q was already used with a different request", idempotencyHeader, key))
			return
		}
		select {
		case <-e.done:
		case <-c.Request.Context().Done():
			c.Abort()
			return
		}
		if !e.kept { // the first attempt failed in a retryable way: run this one
			c.Header("Idempotent-Replayed", "false")
			s.idempotent(c, d, body, run)
			return
		}
		c.Header("Idempotent-Replayed", "true")
		c.Data(e.status, e.ctype, e.body)
		c.Abort()
		return
	}
	cw := &captureWriter{ResponseWriter: c.Writer}
	c.Writer = cw
	complete := false
	defer func() {
		s.idem.finish(fullKey, e, cw.Status(), cw.Header().Get("Content-Type"), cw.buf.Bytes(), complete && !cw.overflow)
	}()
	run()
	complete = c.Request.Context().Err() == nil
}

// clientFrom returns the authenticated client of the request.
func clientFrom(c *gin.Context) (string, bool) {
	v := scheduler.ClientOf(c.Request.Context())
	return v, v != ""
}
