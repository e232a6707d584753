package server

import (
	"context"
	"image"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

func postWithKey(h http.Handler, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/image/generations", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	if key != "" {
		req.Header.Set(idempotencyHeader, key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestIdempotencyKey(t *testing.T) {
	var runs atomic.Int64
	var fail atomic.Bool
	release := make(chan struct{})
	f := &fakeSched{ready: true, submit: func(ctx context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		runs.Add(1)
		<-release
		if fail.Load() {
			return nil, scheduler.ErrQueueFull
		}
		return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 4, 4))}}, nil
	}}
	h := newTestServer(runners.ServiceImage, f)
	body := `{"prompt":"a","guidance_scale":5}`

	// Two concurrent tries with one key share one run and one answer.
	var wg sync.WaitGroup
	answers := make([]*httptest.ResponseRecorder, 2)
	for i := range answers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = postWithKey(h, "k1", body) }()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	require.Equal(t, int64(1), runs.Load())
	require.Equal(t, 200, answers[0].Code)
	require.Equal(t, answers[0].Body.String(), answers[1].Body.String())

	// A later retry is replayed from the store.
	w := postWithKey(h, "k1", body)
	require.Equal(t, 200, w.Code)
	require.Equal(t, "true", w.Header().Get("Idempotent-Replayed"))
	require.Equal(t, int64(1), runs.Load())

	// Same key, different body: 409.
	w = postWithKey(h, "k1", `{"prompt":"b","guidance_scale":5}`)
	require.Equal(t, 409, w.Code, w.Body.String())

	// A retryable failure is not stored: the retry runs again.
	fail.Store(true)
	require.Equal(t, 429, postWithKey(h, "k2", body).Code)
	fail.Store(false)
	require.Equal(t, 200, postWithKey(h, "k2", body).Code)
	require.Equal(t, int64(3), runs.Load())

	// No key: every request runs.
	postWithKey(h, "", body)
	postWithKey(h, "", body)
	require.Equal(t, int64(5), runs.Load())

	require.Equal(t, 400, postWithKey(h, strings.Repeat("x", 300), body).Code)
}

func TestIdempotencyStoreExpiresAndBounds(t *testing.T) {
	st := newIdempotencyStore()
	now := time.Now()
	st.now = func() time.Time { return now }
	e, owner := st.begin("a", [32]byte{1})
	require.True(t, owner)
	st.finish("a", e, 200, "application/json", []byte("{}"), true)
	_, owner = st.begin("a", [32]byte{1})
	require.False(t, owner)
	now = now.Add(idempotencyTTL + time.Second)
	_, owner = st.begin("a", [32]byte{1})
	require.True(t, owner, "expired keys start afresh")

	for i := range maxIdempotentEntries + 10 {
		e, _ := st.begin(strings.Repeat("k", 1+i%50)+string(rune(i)), [32]byte{})
		st.finish("x", e, 200, "", nil, true)
	}
	require.LessOrEqual(t, len(st.entries), maxIdempotentEntries)
}
