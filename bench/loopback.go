package bench

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// CheckTarget parses base (an http or https URL) and refuses it unless its host is a
// loopback address — a literal 127.0.0.0/8 or ::1 address, or "localhost" — or allowRemote
// is set. Host names other than localhost are not resolved: they count as remote.
func CheckTarget(base string, allowRemote bool) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("%w: target URL %q: %w", ErrConfig, base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: target URL %q: scheme must be http or https", ErrConfig, base)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w: target URL %q has no host", ErrConfig, base)
	}
	if allowRemote || IsLoopbackHost(host) {
		return u, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrRemoteTarget, host)
}

// IsLoopbackHost reports whether host (without port) is a loopback IP literal or localhost.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
