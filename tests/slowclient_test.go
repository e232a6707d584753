package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var goroutinesRe = regexp.MustCompile(`(?m)^go_goroutines (\d+)`)

func goroutines(t *testing.T, s *server) int {
	t.Helper()
	r := s.get(t, "/metrics")
	require.Equal(t, http.StatusOK, r.Status)
	m := goroutinesRe.FindSubmatch(r.Body)
	require.NotNil(t, m, "go_goroutines missing from /metrics")
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}

// TestSlowClientsDoNotPinWorkersOrLeak opens many slowloris-style connections (headers dribbled
// a byte at a time, and uploads that stall mid-body) and checks that other clients are served
// at normal speed meanwhile, that no worker is pinned, and that goroutines return to their
// baseline once the slow clients go away.
func TestSlowClientsDoNotPinWorkersOrLeak(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "DEVICE_IDS": "(0)", "MOCK_DEVICES_COUNT": "1"})
	wav := wavPCM16(16000, tone(16000, 1, 440, 0.3))
	valid := func() reply {
		return s.postMultipart(t, "/audio/transcriptions", file("a.wav", "audio/wav", wav), field("is_preprocessing_enabled", "false"))
	}
	require.Equal(t, http.StatusOK, valid().Status)
	base := goroutines(t, s)

	const slowHeaders, slowBodies = 60, 30
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
		require.NoError(t, err)
		conns = append(conns, c)
		return c
	}
	for range slowHeaders { // a request line and half a header, then silence
		c := dial()
		_, err := c.Write([]byte("POST /audio/transcriptions HTTP/1.1\r\nHost: x\r\nAuthor"))
		require.NoError(t, err)
	}
	for range slowBodies { // a full header promising 10 MB, then 10 bytes, then silence
		c := dial()
		_, err := fmt.Fprintf(c, "POST /audio/transcriptions HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n"+
			"Content-Type: multipart/form-data; boundary=zz\r\nContent-Length: 10000000\r\n\r\n--zz\r\nContent", bearer)
		require.NoError(t, err)
	}
	time.Sleep(300 * time.Millisecond)

	// Everyone else is served, and promptly: the slow clients hold connections, not workers.
	for range 5 {
		start := time.Now()
		require.Equal(t, http.StatusOK, valid().Status)
		require.Less(t, time.Since(start), 3*time.Second)
	}
	code, live := s.liveness(t)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 0, live["queue_size"], "slow uploads never reach the queue")

	// The slow clients leave; their goroutines go with them.
	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := goroutines(t, s)
		if n <= base+5 {
			break
		}
		require.Falsef(t, time.Now().After(deadline), "goroutines stayed at %d (baseline %d) after the slow clients left", n, base)
		time.Sleep(100 * time.Millisecond)
	}
	// And a fresh slow header eventually gets cut off by ReadHeaderTimeout rather than held forever.
	c := dial()
	_, err := c.Write([]byte("GET /tt-liveness HTTP/1.1\r\n"))
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	require.Error(t, err, "a connection that never finishes its headers is closed by the server")
}
