package server

// /tt-liveness is polled (load balancers, Kubernetes probes, dashboards) far more often than
// the server's state changes. The handler keeps its last encoded answer with a fingerprint of
// every input it was built from (one pool's workers, queue, readiness, canary and the image
// codecs; the settings do not change); while the fingerprint is the same it answers those
// bytes without building and encoding the body again. The fingerprint is computed from the
// same snapshot the body is built from, so a cached body is always the body of its inputs.

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

// livenessCache is the last /tt-liveness answer and its fingerprint.
type livenessCache struct {
	last atomic.Pointer[cachedLiveness]
}

type cachedLiveness struct {
	key, body []byte
	status    int
}

// answer writes the cached answer when its fingerprint is key.
func (lc *livenessCache) answer(c *gin.Context, key []byte) bool {
	last := lc.last.Load()
	if last == nil || !bytes.Equal(last.key, key) {
		return false
	}
	writeLiveness(c, last.status, last.body)
	return true
}

// store keeps a copy of key (the caller's buffer is reused).
func (lc *livenessCache) store(key []byte, status int, body []byte) {
	lc.last.Store(&cachedLiveness{key: bytes.Clone(key), body: body, status: status})
}

// keyBufs are the scratch buffers of livenessKey (one per request in flight).
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// livenessKey fingerprints everything livenessResponse reads of one pool's snapshot into k
// (reset; its capacity reused): strings length-prefixed, numbers as 8 fixed bytes (no decimal
// formatting: the key is only compared), workers in id order.
func livenessKey(k []byte, sn poolSnapshot) []byte {
	k = k[:0]
	num := func(n int64) {
		k = binary.LittleEndian.AppendUint64(k, uint64(n))
	}
	str := func(s string) {
		num(int64(len(s)))
		k = append(k, s...)
	}
	flag := func(b bool) {
		if b {
			k = append(k, 't')
		} else {
			k = append(k, 'f')
		}
	}
	num(int64(sn.queue))
	num(int64(sn.capacity))
	flag(sn.ready)
	flag(sn.canary.Enabled)
	flag(sn.canary.Alive)
	str(sn.canary.State)
	cs := imaging.Status()
	str(cs.JPEG)
	str(cs.JPEGDetail)
	str(cs.WebP)
	str(cs.WebPDetail)
	var idBuf [8]string
	ids := idBuf[:0]
	for id := range sn.workers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := sn.workers[id]
		str(id)
		num(int64(w.PID))
		flag(w.IsAlive)
		flag(w.IsReady)
		num(w.StartTime.UnixNano())
		flag(w.StartTime.IsZero())
		num(w.ReadyTime.UnixNano())
		flag(w.ReadyTime.IsZero())
		num(int64(w.RestartCount))
		num(int64(w.ErrorCount))
		str(w.State)
		str(w.LastError)
		num(int64(len(w.Devices)))
		for _, d := range w.Devices {
			num(int64(d))
		}
		num(int64(w.StepsDone))
		num(int64(w.StepsTotal))
	}
	return k
}
