package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Connections (issue 21 item 7), on the real binary.

// openFDs counts the server process's open file descriptors.
func openFDs(t *testing.T, s *server) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	require.NoError(t, err)
	return len(ents)
}

// TestConnectionCap: 400 idle, unauthenticated connections against MAX_CONNECTIONS=64: the
// server's descriptors stay bounded, and /tt-liveness and a real request still answer at once
// (the longest-idle connections are closed to make room).
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet", "MAX_CONNECTIONS": "64"})
	base := openFDs(t, s)
	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			_ = c.Close()
		}
	})
	for range 400 {
		c, err := net.Dial("tcp", s.URL[len("http://"):])
		require.NoError(t, err)
		idle = append(idle, c)
	}
	time.Sleep(200 * time.Millisecond) // let the server accept what the kernel queued
	fds := openFDs(t, s)
	require.LessOrEqualf(t, fds, base+64+4, "%d descriptors with 400 idle connections and MAX_CONNECTIONS=64 (%d before)", fds, base)

	start := time.Now()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(s.URL + "/tt-liveness")
	require.NoError(t, err, "liveness must answer under a connection flood")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, time.Since(start), 2*time.Second)
	t.Logf("server fds: %d before, %d with 400 idle connections (MAX_CONNECTIONS=64); liveness in %v",
		base, fds, time.Since(start).Round(time.Millisecond))
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "MAX_CONNECTIONS reached") },
		10*time.Second, 20*time.Millisecond)
}

// TestSlowUploadHonoursRequestTimeout: a body that stalls is cut at the request's
// X-Request-Timeout (408), not after the server's 5-minute read timeout.
func TestSlowUploadHonoursRequestTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet"})
	c, err := net.Dial("tcp", s.URL[len("http://"):])
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	_, err = fmt.Fprintf(c, "POST /cnn/search-image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000000\r\nX-Request-Timeout: 1\r\n\r\n{\"prompt\":\"", bearer)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	status, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err, "no answer to a stalled upload")
	took := time.Since(start)
	require.Contains(t, status, " 408 ")
	require.Less(t, took, 4*time.Second, "the stalled upload was answered after %v", took)
}

// TestWriteDeadlineFreesUnreadStream: a client that never reads its SSE image stream (a
// 4 KiB receive window) no longer holds the handler past its X-Request-Timeout: the blocked
// write fails at the deadline plus the write grace (5 s) and the request ends (its access-log
// line appears).
func TestWriteDeadlineFreesUnreadStream(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.01", "MOCK_DEVICES_COUNT": "1"})
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", s.URL[len("http://"):])
	require.NoError(t, err)
	defer c.Close()
	const body = `{"prompt":"Volcano on a beach","seed":3,"n":4,"stream":true,"partial_images":3,"output_format":"png","quality":"high"}`
	start := time.Now()
	_, err = fmt.Fprintf(c, "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nX-Request-Timeout: 2\r\n\r\n%s", bearer, len(body), body)
	require.NoError(t, err)
	// Never read. The request's log line appears once its handler has returned.
	require.Eventually(t, func() bool {
		return strings.Contains(s.stderr.String(), "path=/v1/images/generations")
	}, 15*time.Second, 50*time.Millisecond, "the handler is still blocked writing to a client that does not read")
	took := time.Since(start)
	t.Logf("unread stream released after %v", took.Round(time.Millisecond))
	require.Greater(t, took, 2*time.Second, "ended before its deadline: did the stream fit the socket buffers?")
}
