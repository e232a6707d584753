package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// capServer serves a CNN pool on a loopback listener with MAX_CONNECTIONS=maxConns and
// BODY_STALL_TIMEOUT_SECONDS=stall, as main wires it (HTTPServer, LimitListener).
func capServer(t *testing.T, maxConns int, stall time.Duration) (*Server, string) {
	t.Helper()
	f := &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return &runners.CNNResult{Top: []runners.Classification{{Label: "tabby", Index: 281, Probability: 0.9}}}, nil
	}}
	cfg := testSettings()
	cfg.ModelRunner, cfg.MaxConnections, cfg.BodyStallTimeout = "tt-xla-resnet", maxConns, stall
	s := New(Deps{Settings: cfg, Pools: []Pool{{Service: runners.ServiceCNN, Runner: cfg.ModelRunner, Sched: f}}, Sched: f, Metrics: metrics.New()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := s.HTTPServer("")
	go func() { _ = srv.Serve(s.LimitListener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s, ln.Addr().String()
}

// stalledUpload dials addr and sends a CNN upload's headers (a 100 kB body announced) and one
// byte of its body, then nothing.
func stalledUpload(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, "POST /cnn/search-image HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	require.NoError(t, err)
	return c
}

// active counts the server's connections in a request.
func active(s *Server) int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	n := 0
	for _, ci := range s.conns.conns {
		if ci.state == http.StateActive && !ci.reserved {
			n++
		}
	}
	return n
}

// connAnswer reads the response on c (the deadline only bounds a broken test) and whether the
// server closed the connection after it (an answer with Connection: close that is then
// followed by the connection's end).
func connAnswer(t *testing.T, c net.Conn) (int, string, bool) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	if !resp.Close { // a keep-alive answer: the connection stays open
		return resp.StatusCode, string(body), false
	}
	_, err = br.ReadByte()
	return resp.StatusCode, string(body), errors.Is(err, io.EOF)
}

func getStatus(t *testing.T, addr, path string) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + path)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHealthAnswersAtConnectionCap (issue 30 item 5): 40 uploads that sent one body byte hold
// every slot of MAX_CONNECTIONS=40 (none idle, so none can be evicted); five more uploads get
// 503 with Connection: close, and /tt-liveness, /health and /metrics still answer 200 on the
// health reserve.
func TestHealthAnswersAtConnectionCap(t *testing.T) {
	s, addr := capServer(t, 40, time.Minute)
	for range 40 {
		stalledUpload(t, addr)
	}
	require.Eventually(t, func() bool { return active(s) == 40 }, 10*time.Second, 5*time.Millisecond, "40 uploads in a request")
	for range 5 {
		code, body, closed := connAnswer(t, stalledUpload(t, addr))
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Contains(t, body, "MAX_CONNECTIONS")
		require.True(t, closed, "a refused connection of the reserve is closed")
	}
	for _, path := range []string{"/tt-liveness", "/health", "/metrics"} {
		require.Equal(t, http.StatusOK, getStatus(t, addr, path), path)
	}
	require.Equal(t, 40, active(s), "the uploads are still stalled: the health answers came from the reserve")
}

// TestStalledUploadsGet408: 45 uploads that stop after one body byte at MAX_CONNECTIONS=40
// (the first 40 in a request before the other 5 dial): /tt-liveness answers 200 while they
// stall; each of the 40 is answered 408 naming BODY_STALL_TIMEOUT_SECONDS, no sooner than the
// stall time, and its connection closed; the 5 over the cap get 503 from the health reserve
// (or, once stalled ones were closed, a regular slot and their own 408).
func TestStalledUploadsGet408(t *testing.T) {
	const stall = 3 * time.Second // the window in which the 40 must be read (a loaded box)
	s, addr := capServer(t, 40, stall)
	start := time.Now()
	conns := make([]net.Conn, 0, 45)
	for range 40 {
		conns = append(conns, stalledUpload(t, addr))
	}
	require.Eventually(t, func() bool { return active(s) == 40 }, stall, 5*time.Millisecond, "40 uploads in a request")
	for range 5 {
		conns = append(conns, stalledUpload(t, addr))
	}
	require.Equal(t, http.StatusOK, getStatus(t, addr, "/tt-liveness"))
	got := map[int]int{}
	for i, c := range conns {
		code, body, closed := connAnswer(t, c)
		got[code]++
		require.True(t, closed, "the connection is closed after %d", code)
		switch {
		case code == http.StatusRequestTimeout:
			require.Contains(t, body, "BODY_STALL_TIMEOUT_SECONDS")
			require.GreaterOrEqual(t, time.Since(start), stall)
		case code == http.StatusServiceUnavailable && i >= 40:
			require.Contains(t, body, "MAX_CONNECTIONS")
		default:
			t.Fatalf("upload %d: status %d: %s", i, code, body)
		}
	}
	require.GreaterOrEqual(t, got[http.StatusRequestTimeout], 40, "%v", got)
	require.Equal(t, 45, got[http.StatusRequestTimeout]+got[http.StatusServiceUnavailable], "%v", got)
	require.Equal(t, http.StatusOK, getStatus(t, addr, "/tt-liveness"))
}

// TestBodyStallKeepsProgressingUploads: a body that keeps arriving, each piece within the stall
// time, is served however long it takes in all; and the stall deadline does not outlive the
// body (the request then waits for its answer longer than the stall time unharmed).
func TestBodyStallKeepsProgressingUploads(t *testing.T) {
	const stall = 1200 * time.Millisecond
	s, addr := capServer(t, 40, stall)
	release := make(chan struct{})
	s.pools[0].Sched.(*fakeSched).submit = func(ctx context.Context, _ runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		select { // the answer waits (well past the stall time) until the test saw the upload finish
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &runners.CNNResult{Top: []runners.Classification{{Label: "tabby", Index: 281, Probability: 0.9}}}, nil
	}
	body := `{"prompt":"` + base64.StdEncoding.EncodeToString(pngBytes(t, image.NewGray(image.Rect(0, 0, 64, 64)))) + `"}`
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /cnn/search-image HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
	require.NoError(t, err)
	// Eight pieces a sixth of the stall time apart: the whole body takes longer than one stall
	// time, each gap well inside it (a second of margin for a loaded CI box).
	piece := (len(body) + 7) / 8
	tick := time.NewTicker(stall / 6)
	defer tick.Stop()
	for off := 0; off < len(body); off += piece {
		<-tick.C
		_, err = io.WriteString(c, body[off:min(off+piece, len(body))])
		require.NoError(t, err)
	}
	timer := time.NewTimer(2 * stall) // the handler now waits for its answer past the stall time
	<-timer.C
	close(release)
	code, resp, _ := connAnswer(t, c)
	require.Equal(t, http.StatusOK, code, resp)
	require.True(t, strings.Contains(resp, "tabby"), resp)
}
