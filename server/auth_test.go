package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestAuthNamedKeysAndAsymmetricJWT(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	rsaPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&rsaKey.PublicKey))})

	sign := func(m jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, claims).SignedString(key)
		require.NoError(t, err)
		return "Bearer " + s
	}
	now := time.Now()
	good := jwt.MapClaims{"sub": "team-a", "iss": "tt", "aud": "media", "exp": now.Add(time.Hour).Unix()}

	tests := []struct {
		name       string
		cfg        AuthConfig
		header     string
		wantClient string // "" = rejected
	}{
		{"named key", AuthConfig{Keys: map[string]string{"api_key": "k", "bench": "bench-key-1"}}, "Bearer bench-key-1", "bench"},
		{"default key name", AuthConfig{Keys: map[string]string{"api_key": "k", "bench": "bench-key-1"}}, "Bearer k", "api_key"},
		{"RS256 with public key", AuthConfig{JWTPublicKey: &rsaKey.PublicKey, JWTIssuer: "tt", JWTAudience: "media"}, sign(jwt.SigningMethodRS256, rsaKey, good), "jwt:team-a"},
		{"ES256 with public key", AuthConfig{JWTPublicKey: &ecKey.PublicKey}, sign(jwt.SigningMethodES256, ecKey, good), "jwt:team-a"},
		{"RS512 refused (alg pinned)", AuthConfig{JWTPublicKey: &rsaKey.PublicKey}, sign(jwt.SigningMethodRS512, rsaKey, good), ""},
		{"HS/RS confusion: HS256 signed with the RSA public key bytes", AuthConfig{JWTPublicKey: &rsaKey.PublicKey}, sign(jwt.SigningMethodHS256, rsaPubPEM, good), ""},
		{"HS256 refused when only a public key is set", AuthConfig{JWTPublicKey: &rsaKey.PublicKey}, sign(jwt.SigningMethodHS256, []byte("secret"), good), ""},
		{"wrong issuer", AuthConfig{JWTSecret: "s", JWTIssuer: "other"}, sign(jwt.SigningMethodHS256, []byte("s"), good), ""},
		{"wrong audience", AuthConfig{JWTSecret: "s", JWTAudience: "other"}, sign(jwt.SigningMethodHS256, []byte("s"), good), ""},
		{"expired beyond leeway", AuthConfig{JWTSecret: "s"}, sign(jwt.SigningMethodHS256, []byte("s"), jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()}), ""},
		{"expired within leeway", AuthConfig{JWTSecret: "s"}, sign(jwt.SigningMethodHS256, []byte("s"), jwt.MapClaims{"exp": now.Add(-10 * time.Second).Unix()}), "jwt"},
		{"malformed token", AuthConfig{JWTSecret: "s"}, "Bearer a.b.c", ""},
		{"token_id names the client", AuthConfig{JWTSecret: "s"}, sign(jwt.SigningMethodHS256, []byte("s"), jwt.MapClaims{"token_id": "debug-test"}), "jwt:debug-test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := newAuthenticator(tc.cfg)
			require.NoError(t, err)
			client, err := a.identify(tc.header)
			if tc.wantClient == "" {
				require.ErrorIs(t, err, errBadCredentials)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantClient, client)
		})
	}
}

func TestAdminKeyGuardsMaintenance(t *testing.T) {
	st := testSettings()
	st.AdminAPIKey = "admin-key-123"
	h := New(Deps{Settings: st, Service: runners.ServiceImage, Sched: &fakeSched{ready: true}}).Handler()
	require.Equal(t, 401, do(h, "POST", "/tt-deep-reset", "", "Bearer k", nil).Code, "a normal key is not enough")
	require.Equal(t, 200, do(h, "POST", "/tt-deep-reset", "", "Bearer admin-key-123", nil).Code)
	require.Equal(t, 401, do(h, "POST", "/image/generations", "application/json", "Bearer admin-key-123", []byte(`{}`)).Code, "the admin key is not an inference key")
}

func TestRateLimitPerClient(t *testing.T) {
	l := newRateLimiter(2, 2)
	now := time.Now()
	l.now = func() time.Time { return now }
	ok, _ := l.allow("a")
	require.True(t, ok)
	ok, _ = l.allow("a")
	require.True(t, ok)
	ok, wait := l.allow("a")
	require.False(t, ok)
	require.InDelta(t, 500*time.Millisecond, wait, float64(10*time.Millisecond))
	ok, _ = l.allow("b")
	require.True(t, ok, "another client has its own bucket")
	now = now.Add(500 * time.Millisecond)
	ok, _ = l.allow("a")
	require.True(t, ok)

	st := testSettings()
	st.RateLimit, st.RateBurst = 1, 1
	h := New(Deps{Settings: st, Service: runners.ServiceImage, Sched: &fakeSched{ready: true, submit: imageOK}}).Handler()
	body := []byte(`{"prompt":"a","guidance_scale":5}`)
	require.Equal(t, 200, do(h, "POST", "/image/generations", "application/json", "Bearer k", body).Code)
	w := do(h, "POST", "/image/generations", "application/json", "Bearer k", body)
	require.Equal(t, 429, w.Code)
	require.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Contains(t, w.Body.String(), "RATE_LIMIT_PER_SECOND")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
