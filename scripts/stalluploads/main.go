// Command stalluploads shows issue 30 item 5 on a running server: N uploads to the CNN route
// that send their headers and one body byte, then nothing (the first CAP of them, then the
// rest); while they stall it asks GET /tt-liveness on a new connection, then it waits for each
// upload's answer and prints the liveness status and the uploads' statuses with their times.
//
//	go run ./scripts/stalluploads ADDR [N CAP]     (scripts/stalled-uploads.sh runs it)
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"time"
)

// waitFor is how long each upload waits for its answer (well past BODY_STALL_TIMEOUT_SECONDS).
const waitFor = 20 * time.Second

const upload = "POST /cnn/search-image HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer your-secret-key\r\n" +
	"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"

func main() {
	if len(os.Args) != 2 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: stalluploads HOST:PORT [N CAP]")
		os.Exit(2)
	}
	addr, n, capN := os.Args[1], 45, 40
	if len(os.Args) == 4 {
		n, _ = strconv.Atoi(os.Args[2])
		capN, _ = strconv.Atoi(os.Args[3])
	}
	start := time.Now()
	conns := make([]net.Conn, 0, n)
	dial := func() {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_, err = io.WriteString(c, upload)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "stalluploads:", err)
			os.Exit(1)
		}
		conns = append(conns, c)
	}
	for range min(n, capN) {
		dial()
	}
	// A script, not a test: give the server a moment to read the first CAP requests, so that
	// the rest arrive with every slot busy in a request (nothing idle to evict).
	time.Sleep(500 * time.Millisecond)
	for len(conns) < n {
		dial()
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	var live string
	if resp, err := client.Get("http://" + addr + "/tt-liveness"); err == nil {
		live = resp.Status
		resp.Body.Close()
	} else {
		live = err.Error()
	}
	fmt.Printf("/tt-liveness with %d stalled uploads: %s in %v\n", n, live, time.Since(t0).Round(time.Millisecond))
	type result struct {
		status string
		at     time.Duration
	}
	results := make([]result, len(conns))
	done := make(chan int)
	for i, c := range conns {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(waitFor))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				results[i] = result{fmt.Sprintf("nothing within %v (still stalled)", waitFor), time.Since(start)}
			case err != nil:
				results[i] = result{"no answer (connection closed)", time.Since(start)}
			default:
				results[i] = result{strconv.Itoa(resp.StatusCode), time.Since(start)}
				resp.Body.Close()
			}
			c.Close()
			done <- i
		}()
	}
	counts := map[string][]time.Duration{}
	for range conns {
		r := results[<-done]
		counts[r.status] = append(counts[r.status], r.at)
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := counts[k]
		sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
		fmt.Printf("uploads answered %s: %d (after %v .. %v)\n", k, len(at), at[0].Round(10*time.Millisecond), at[len(at)-1].Round(10*time.Millisecond))
	}
}
