// Command tt-healthcheck is the container health probe of the tt-media-server images: it asks
// the server in the same container for GET /tt-liveness (or the path given as the only
// argument) and exits 0 on HTTP 200, 1 otherwise. It exists because the images carry no curl
// or wget (the sim image is debian:bookworm-slim with ffmpeg and the codecs only). It reads SERVICE_HOST and SERVICE_PORT as the server does;
// a wildcard or empty host means loopback.
//
// It is a module of its own with no dependencies, so the image build compiles it offline.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	defaultPath = "/tt-liveness"
	timeout     = 2 * time.Second
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.LookupEnv, http.DefaultTransport); err != nil {
		fmt.Fprintln(os.Stderr, "tt-healthcheck:", err)
		os.Exit(1)
	}
}

// errUnhealthy is returned when the server answers with a status other than 200.
var errUnhealthy = errors.New("unhealthy")

// probeURL builds the URL from SERVICE_HOST/SERVICE_PORT and the path argument.
func probeURL(args []string, lookup func(string) (string, bool)) (string, error) {
	path := defaultPath
	switch len(args) {
	case 0:
	case 1:
		path = args[0]
		if !strings.HasPrefix(path, "/") {
			return "", fmt.Errorf("path %q must start with /", path)
		}
	default:
		return "", fmt.Errorf("usage: tt-healthcheck [/path] (got %d arguments)", len(args))
	}
	host, _ := lookup("SERVICE_HOST")
	switch strings.TrimSpace(host) {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	port := "8000"
	if p, ok := lookup("SERVICE_PORT"); ok && strings.TrimSpace(p) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("SERVICE_PORT %q is not a port number", p)
		}
		port = strconv.Itoa(n)
	}
	return "http://" + net.JoinHostPort(strings.Trim(host, "[]"), port) + path, nil
}

func run(ctx context.Context, args []string, lookup func(string) (string, bool), rt http.RoundTripper) error {
	url, err := probeURL(args, lookup)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	client := &http.Client{Transport: rt}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %w: HTTP %d: %s", url, errUnhealthy, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
