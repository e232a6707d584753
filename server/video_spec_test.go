package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// TestOpenAPIVideoMatchesRouter: a video server mounts exactly the spec's video operations
// (and the ones every server mounts).
func TestOpenAPIVideoMatchesRouter(t *testing.T) {
	doc := loadSpec(t)
	store, err := jobs.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	files, err := jobs.NewFiles(t.TempDir())
	require.NoError(t, err)
	st := testSettings()
	st.ModelRunner = catalogue.RunnerWan22
	s := New(Deps{Settings: st, Service: runners.ServiceVideo, Sched: &fakeSched{ready: true}, Metrics: metrics.New(),
		Video: &VideoJobs{Store: store, Files: files}})
	t.Cleanup(s.CloseVideo)
	require.Equal(t, specOperations(doc, runners.ServiceVideo), routerOperations(s))
}

// TestOpenAPIVideoContract drives both dialects' video routes through a job's life (submit,
// poll, download whole and by Range, stills, list, cancel, delete, refusals) and validates
// every request and answer against the spec.
func TestOpenAPIVideoContract(t *testing.T) {
	needVideoTools(t)
	registerTextDecoders()
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	e := newVideoEnv(t, catalogue.RunnerWan22, 20*time.Millisecond, nil)

	type call struct {
		method, path, ctype string
		body                []byte
		header              map[string]string
		noAuth              bool
		status              int
		skipReq             bool // deliberately invalid: the spec would refuse it too
	}
	check := func(t *testing.T, c call) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(c.method, c.path, bytes.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		if !c.noAuth {
			req.Header.Set("Authorization", videoAuth)
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		route, params, err := router.FindRoute(req)
		require.NoError(t, err, "%s %s is not in the spec", c.method, c.path)
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if !c.skipReq {
			require.NoError(t, openapi3filter.ValidateRequest(context.Background(), in), "%s %s: request is not valid for the spec", c.method, c.path)
		}
		req.Body = io.NopCloser(bytes.NewReader(c.body))
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		require.Equal(t, c.status, w.Code, "%s %s: %.400s", c.method, c.path, w.Body.String())
		require.NoError(t, openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: w.Code, Header: w.Header(), Body: io.NopCloser(bytes.NewReader(w.Body.Bytes())),
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		}), "%s %s: answer %d %s is not one the spec documents: %.400s", c.method, c.path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		return w
	}
	id := func(w *httptest.ResponseRecorder) string {
		var j struct{ ID string }
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &j))
		require.NotEmpty(t, j.ID)
		return j.ID
	}
	const js = "application/json"

	// HEAD's dialect.
	w := check(t, call{method: "POST", path: "/v1/videos/generations", ctype: js, status: 202,
		body: []byte(`{"prompt":"a red fox","negative_prompt":"blur","num_inference_steps":4,"seed":3}`)})
	head := id(w)
	require.Equal(t, jobs.Completed, e.wait(t))
	for _, c := range []call{
		{method: "GET", path: "/v1/videos/generations/" + head, status: 200},
		{method: "GET", path: "/video/generations/" + head, status: 200},
		{method: "GET", path: "/v1/videos/jobs", status: 200},
		{method: "GET", path: "/video/jobs", status: 200},
		{method: "GET", path: "/v1/videos/generations/" + head + "/download", status: 200},
		{method: "GET", path: "/v1/videos/generations/" + head + "/download", header: map[string]string{"Range": "bytes=0-99"}, status: 206},
		{method: "POST", path: "/v1/videos/generations/" + head + "/cancel", status: 409},
		{method: "GET", path: "/v1/videos/generations/video_nope", status: 404},
		{method: "GET", path: "/v1/videos/generations/video_nope/download", status: 404},
		{method: "GET", path: "/v1/videos/generations/" + head, noAuth: true, status: 401},
		{method: "POST", path: "/v1/videos/generations", ctype: js, status: 422, skipReq: true, body: []byte(`{"prompt":"x","width":5}`)},
		{method: "POST", path: "/v1/videos/generations", ctype: js, status: 422, skipReq: true, body: []byte(`{"prompt":"x","num_inference_steps":3}`)},
	} {
		check(t, c)
	}

	// A running job: the download is a 409 naming its state; its cancel answers the job.
	w = check(t, call{method: "POST", path: "/video/generations", ctype: js, status: 202, body: []byte(`{"prompt":"slow","num_inference_steps":50}`)})
	slow := id(w)
	require.Eventually(t, func() bool {
		j, err := e.store.Get(context.Background(), slow)
		return err == nil && j.Status == jobs.InProgress
	}, 20*time.Second, 5*time.Millisecond)
	check(t, call{method: "GET", path: "/v1/videos/generations/" + slow + "/download", status: 409})
	check(t, call{method: "POST", path: "/video/generations/" + slow + "/cancel", status: 200})
	require.Equal(t, jobs.Cancelled, e.wait(t))

	// OpenAI's dialect.
	w = check(t, call{method: "POST", path: "/v1/videos", ctype: js, status: 200, body: []byte(`{"prompt":"waves","model":"tt-wan2.2","seconds":"5"}`)})
	oa := id(w)
	require.Equal(t, jobs.Completed, e.wait(t))
	for _, c := range []call{
		{method: "GET", path: "/v1/videos", status: 200},
		{method: "GET", path: "/v1/videos?limit=1&order=asc", status: 200},
		{method: "GET", path: "/v1/videos?limit=0", status: 400, skipReq: true},
		{method: "GET", path: "/v1/videos/" + oa, status: 200},
		{method: "GET", path: "/v1/videos/" + oa + "/content", status: 200},
		{method: "GET", path: "/v1/videos/" + oa + "/content?variant=thumbnail", status: 200},
		{method: "GET", path: "/v1/videos/" + oa + "/content?variant=spritesheet", status: 200},
		{method: "GET", path: "/v1/videos/" + oa + "/content?variant=video", header: map[string]string{"Range": "bytes=10-19"}, status: 206},
		{method: "GET", path: "/v1/videos/" + oa + "/content?variant=poster", status: 400, skipReq: true},
		{method: "POST", path: "/v1/videos/" + oa + "/remix", status: 400},
		{method: "POST", path: "/v1/videos", ctype: js, status: 404, body: []byte(`{"prompt":"x","model":"sora-2"}`)},
		{method: "POST", path: "/v1/videos", ctype: js, status: 400, skipReq: true, body: []byte(`{"prompt":"x","quality":"high"}`)},
		{method: "POST", path: "/v1/videos", ctype: "text/plain", status: 400, skipReq: true, body: []byte(`prompt`)},
		{method: "GET", path: "/v1/videos/" + oa, noAuth: true, status: 401},
		{method: "DELETE", path: "/v1/videos/" + oa, status: 200},
		{method: "GET", path: "/v1/videos/" + oa, status: 404},
		{method: "DELETE", path: "/v1/videos/" + oa, status: 404},
	} {
		check(t, c)
	}
}
