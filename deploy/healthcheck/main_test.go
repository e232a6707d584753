package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

func TestProbeURL(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "defaults", want: "http://127.0.0.1:8000/tt-liveness"},
		{name: "wildcard host is loopback", env: map[string]string{"SERVICE_HOST": "0.0.0.0", "SERVICE_PORT": "9000"}, want: "http://127.0.0.1:9000/tt-liveness"},
		{name: "ipv6 wildcard is loopback", env: map[string]string{"SERVICE_HOST": "::"}, want: "http://127.0.0.1:8000/tt-liveness"},
		{name: "specific host kept", env: map[string]string{"SERVICE_HOST": "10.1.2.3"}, want: "http://10.1.2.3:8000/tt-liveness"},
		{name: "ipv6 host bracketed", env: map[string]string{"SERVICE_HOST": "::1"}, want: "http://[::1]:8000/tt-liveness"},
		{name: "path argument", args: []string{"/health"}, want: "http://127.0.0.1:8000/health"},
		{name: "relative path refused", args: []string{"health"}, wantErr: "must start with /"},
		{name: "two arguments refused", args: []string{"/a", "/b"}, wantErr: "usage"},
		{name: "bad port", env: map[string]string{"SERVICE_PORT": "80a"}, wantErr: "not a port number"},
		{name: "port out of range", env: map[string]string{"SERVICE_PORT": "70000"}, wantErr: "not a port number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probeURL(tc.args, env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("url = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunAgainstServer(t *testing.T) {
	var gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.Path
		switch r.URL.Path {
		case "/tt-liveness":
			w.WriteHeader(http.StatusOK)
		default:
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"detail":"Model is not ready"}`))
		}
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	e := env(map[string]string{"SERVICE_HOST": "0.0.0.0", "SERVICE_PORT": port})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if err := run(ctx, nil, e, http.DefaultTransport); err != nil {
		t.Fatalf("healthy server: %v", err)
	}
	if gotPath != "/tt-liveness" {
		t.Fatalf("probed %q", gotPath)
	}
	err = run(ctx, []string{"/health"}, e, http.DefaultTransport)
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "Model is not ready") {
		t.Fatalf("503 server: err = %v", err)
	}
}

func TestRunNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // nothing listens on port now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := run(ctx, nil, env(map[string]string{"SERVICE_PORT": port}), http.DefaultTransport); err == nil {
		t.Fatal("want an error with no server")
	}
}
