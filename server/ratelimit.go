package server

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// rateLimiter is an optional token bucket per client (RATE_LIMIT_PER_SECOND,
// RATE_LIMIT_BURST). Idle buckets are dropped so the map cannot grow without bound.
type rateLimiter struct {
	rps   rate.Limit
	burst int
	mu    sync.Mutex
	byKey map[string]*bucket
	now   func() time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// maxBuckets caps the tracked clients (clients are authenticated, so this is generous).
const maxBuckets = 10000

func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	return &rateLimiter{rps: rate.Limit(perSecond), burst: burst, byKey: map[string]*bucket{}, now: time.Now}
}

// allow takes a token for client, or says how long until one is available.
func (l *rateLimiter) allow(client string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.byKey[client]
	if b == nil {
		if len(l.byKey) >= maxBuckets {
			l.sweepLocked(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.rps, l.burst)}
		l.byKey[client] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweepLocked drops buckets idle long enough to be full again.
func (l *rateLimiter) sweepLocked(now time.Time) {
	full := time.Duration(float64(l.burst) / float64(l.rps) * float64(time.Second))
	for k, b := range l.byKey {
		if now.Sub(b.seen) > full {
			delete(l.byKey, k)
		}
	}
}

// rateLimit answers 429 with Retry-After when the client is over its rate. It runs after auth,
// so the bucket is the authenticated client's; its refusal is answered in envelope d.
func (s *Server) rateLimit(d dialect) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.limits == nil {
			c.Next()
			return
		}
		ok, wait := s.limits.allow(scheduler.ClientOf(c.Request.Context()))
		if !ok {
			s.fail(c, d, &apiError{status: http.StatusTooManyRequests, retryAfter: wait,
				msg: "Rate limit exceeded for this client (RATE_LIMIT_PER_SECOND). Please retry after the Retry-After interval."})
			return
		}
		c.Next()
	}
}
