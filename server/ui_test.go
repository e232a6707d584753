package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestUIPages(t *testing.T) {
	all := []runners.Service{runners.ServiceImage, runners.ServiceAudio, runners.ServiceCNN}
	meta := regexp.MustCompile(`<meta name="tt-services" content="([^"]*)">`)
	tests := []struct {
		name     string
		services []runners.Service
		want     string
	}{
		{"image", all[:1], "image"},
		{"audio", all[1:2], "audio"},
		{"cnn", all[2:], "cnn"},
		{"pools", all, "image,audio,cnn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := specTestServer(&fakeSched{ready: true}, tc.services...).Handler()

			w := do(h, http.MethodGet, "/ui", "", "", nil)
			require.Equal(t, http.StatusMovedPermanently, w.Code)
			require.Equal(t, "ui/", w.Header().Get("Location"))

			for _, path := range []string{"/ui/", "/ui/index.html"} {
				w = do(h, http.MethodGet, path, "", "", nil)
				require.Equal(t, http.StatusOK, w.Code, path)
				require.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
				require.Contains(t, w.Header().Get("Content-Security-Policy"), "default-src 'self'")
				m := meta.FindStringSubmatch(w.Body.String())
				require.NotNil(t, m, "no tt-services meta in the page")
				require.Equal(t, tc.want, m[1])
			}
		})
	}
}

func TestUIFiles(t *testing.T) {
	h := specTestServer(&fakeSched{ready: true}, runners.ServiceImage).Handler()
	tests := []struct {
		path, ctype string
		status      int
		contains    string
	}{
		{"/ui/app.js", "text/javascript; charset=utf-8", 200, "tt-services"},
		{"/ui/style.css", "text/css; charset=utf-8", 200, ".card"},
		{"/ui/docs.js", "text/javascript; charset=utf-8", 200, "Redoc.init('openapi.json'"},
		{"/ui/vendor/redoc.standalone.js", "text/javascript; charset=utf-8", 200, "redoc.standalone.js.LICENSE.txt"},
		{"/ui/vendor/redoc.LICENSE", "text/plain; charset=utf-8", 200, "MIT"},
		{"/ui/docs.html", "", 404, `"detail":"Not Found"`}, // served at /docs only
		{"/ui/nope.js", "", 404, `"detail":"Not Found"`},
		{"/ui/../server.go", "", 404, ""},
		{"/ui/%2e%2e/spec.go", "", 404, ""},
		{"/ui/vendor/../../openapi.yaml", "", 404, ""},
		{"/docs", "text/html; charset=utf-8", 200, `src="ui/vendor/redoc.standalone.js"`},
		{"/openapi.json", "application/json", 200, `"openapi": "3.1.0"`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			w := do(h, http.MethodGet, tc.path, "", "", nil)
			require.Equal(t, tc.status, w.Code, "%.200s", w.Body.String())
			if tc.ctype != "" {
				require.Equal(t, tc.ctype, w.Header().Get("Content-Type"))
			}
			require.True(t, strings.Contains(w.Body.String(), tc.contains), "%s does not contain %q: %.300s", tc.path, tc.contains, w.Body.String())
		})
	}
}

// TestUIHasNoThirdPartyOrigins: the pages load nothing from other origins (no CDN), and the
// demo's scripts call the API with relative URLs.
func TestUIHasNoThirdPartyOrigins(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`)
	for _, name := range []string{"index.html", "docs.html", "app.js", "docs.js", "style.css"} {
		data, err := os.ReadFile(filepath.Join("web", name))
		require.NoError(t, err)
		require.NotRegexp(t, external, string(data), name)
		require.NotContains(t, string(data), "fetch('http", name)
		require.NotContains(t, string(data), "@import", name)
	}
}

// TestVendoredRedocMatchesPin: the committed bundle is the version scripts/docs-ui pins,
// with its licence notes next to it.
func TestVendoredRedocMatchesPin(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile(filepath.Join("..", "scripts", "docs-ui", "package.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &pkg))
	want := pkg.Dependencies["redoc"]
	require.Regexp(t, `^\d+\.\d+\.\d+$`, want, "redoc must be pinned to an exact version")

	version, err := webFiles.ReadFile("web/vendor/VERSION")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(version), "redoc "+want+" "), "web/vendor/VERSION says %q, package.json pins %s", version, want)
	bundle, err := webFiles.ReadFile("web/vendor/redoc.standalone.js")
	require.NoError(t, err)
	require.Contains(t, string(bundle), `"`+want+`"`, "the bundle is not redoc %s", want)
	require.NotContains(t, string(bundle), "https://cdn.", "the bundle loads from a CDN: rebuild it with scripts/build-docs-ui.sh")
	for _, f := range []string{"redoc.LICENSE", "redoc.standalone.js.LICENSE.txt"} {
		_, err := webFiles.ReadFile("web/vendor/" + f)
		require.NoError(t, err)
	}
}
