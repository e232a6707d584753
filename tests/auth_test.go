package tests

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

const (
	jwtSecret = "my-secret-string"
	// clientToken is tt-inference-server's client token: HS256 over
	// {"team_id":"tenstorrent","token_id":"debug-test"} with JWT_SECRET=my-secret-string.
	clientToken    = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0ZWFtX2lkIjoidGVuc3RvcnJlbnQiLCJ0b2tlbl9pZCI6ImRlYnVnLXRlc3QifQ._DyDlvNgSAt7R1D-eOOtYwHJaogoCgYbIzGynnQvixc"
	smallImageBody = `{"prompt":"Volcano on a beach","guidance_scale":7.0,"seed":1,"num_inference_steps":12}`
)

func mint(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return s
}

func TestAuth(t *testing.T) {
	t.Parallel()

	// The fixture token really is what the brief says it is.
	parsed, err := jwt.Parse(clientToken, func(*jwt.Token) (any, error) { return []byte(jwtSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}))
	require.NoError(t, err, "fixture token does not verify with %q", jwtSecret)
	require.Equal(t, "tenstorrent", parsed.Claims.(jwt.MapClaims)["team_id"])

	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "JWT_SECRET": jwtSecret})
	claims := jwt.MapClaims{"team_id": "tenstorrent", "token_id": "debug-test"}
	future := jwt.MapClaims{"team_id": "tenstorrent", "exp": time.Now().Add(time.Hour).Unix()}
	expired := jwt.MapClaims{"team_id": "tenstorrent", "exp": time.Now().Add(-time.Hour).Unix()}

	const badKey = "Invalid or missing API Key"
	tests := []struct {
		name       string
		header     string // "" sends no Authorization header
		wantStatus int
		wantDetail string // checked when not empty
	}{
		{"no header", "", http.StatusUnauthorized, ""},
		{"wrong key", "Bearer wrong-key", http.StatusUnauthorized, badKey},
		{"key without Bearer", apiKey, http.StatusUnauthorized, badKey},
		{"Basic scheme", "Basic eW91ci1zZWNyZXQta2V5", http.StatusUnauthorized, badKey},
		{"API key", bearer, http.StatusOK, ""},
		{"tt-inference-server client token", "Bearer " + clientToken, http.StatusOK, ""},
		{"token with future exp", "Bearer " + mint(t, jwt.SigningMethodHS256, []byte(jwtSecret), future), http.StatusOK, ""},
		{"token signed with another secret", "Bearer " + mint(t, jwt.SigningMethodHS256, []byte("another-secret"), claims), http.StatusUnauthorized, badKey},
		{"expired token", "Bearer " + mint(t, jwt.SigningMethodHS256, []byte(jwtSecret), expired), http.StatusUnauthorized, badKey},
		{"alg none", "Bearer " + mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims), http.StatusUnauthorized, badKey},
		{"HS512 with the right secret", "Bearer " + mint(t, jwt.SigningMethodHS512, []byte(jwtSecret), claims), http.StatusUnauthorized, badKey},
		{"token with its signature cut", "Bearer " + clientToken[:len(clientToken)-5], http.StatusUnauthorized, badKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			headers := []string{"Content-Type", "application/json"}
			if tc.header != "" {
				headers = append(headers, "Authorization", tc.header)
			}
			r := do(t, http.MethodPost, s.URL+"/image/generations", []byte(smallImageBody), headers...)
			require.Equalf(t, tc.wantStatus, r.Status, "%s", r)
			if tc.wantStatus == http.StatusOK {
				var out struct{ Images []string }
				r.JSON(t, &out)
				require.Len(t, out.Images, 1)
				return
			}
			detail, ok := r.obj(t)["detail"].(string)
			require.Truef(t, ok, "detail is not a string: %s", r)
			require.NotEmpty(t, detail)
			if tc.wantDetail != "" {
				require.Equal(t, tc.wantDetail, detail)
			}
		})
	}

	t.Run("maintenance routes need credentials", func(t *testing.T) {
		for _, p := range []string{"/tt-deep-reset", "/tt-reset-device?device_id=0"} {
			r := do(t, http.MethodPost, s.URL+p, nil)
			require.Equalf(t, http.StatusUnauthorized, r.Status, "%s: %s", p, r)
			r = do(t, http.MethodPost, s.URL+p, nil, "Authorization", "Bearer wrong-key")
			require.Equalf(t, http.StatusUnauthorized, r.Status, "%s: %s", p, r)
		}
	})

	t.Run("liveness and health are open", func(t *testing.T) {
		for _, p := range []string{"/tt-liveness", "/health"} {
			r := s.get(t, p)
			require.Equalf(t, http.StatusOK, r.Status, "%s: %s", p, r)
		}
	})

	t.Run("without JWT_SECRET a JWT is refused", func(t *testing.T) {
		plain := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_DEVICES_COUNT": "1"})
		r := do(t, http.MethodPost, plain.URL+"/image/generations", []byte(smallImageBody),
			"Content-Type", "application/json", "Authorization", "Bearer "+clientToken)
		require.Equalf(t, http.StatusUnauthorized, r.Status, "%s", r)
		require.Equal(t, badKey, r.obj(t)["detail"])
	})

	t.Run("custom API_KEY replaces the default", func(t *testing.T) {
		custom := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_DEVICES_COUNT": "1", "API_KEY": "my-secure-secret-key-123"})
		r := do(t, http.MethodPost, custom.URL+"/image/generations", []byte(smallImageBody),
			"Content-Type", "application/json", "Authorization", bearer)
		require.Equalf(t, http.StatusUnauthorized, r.Status, "default key accepted: %s", r)
		r = do(t, http.MethodPost, custom.URL+"/image/generations", []byte(smallImageBody),
			"Content-Type", "application/json", "Authorization", "Bearer my-secure-secret-key-123")
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	})
}
