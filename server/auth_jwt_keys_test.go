package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// With both JWT_SECRET and a public key configured, one parser serves both: each algorithm
// gets only its own key, so neither key can verify a token of the other algorithm.
func TestJWTBothKeysPinnedPerAlgorithm(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	rsaPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&rsaKey.PublicKey))})
	sign := func(m jwt.SigningMethod, key any) string {
		s, err := jwt.NewWithClaims(m, jwt.MapClaims{"sub": "bob"}).SignedString(key)
		require.NoError(t, err)
		return "Bearer " + s
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "bob"}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)

	both := AuthConfig{JWTSecret: "s3cret", JWTPublicKey: &rsaKey.PublicKey}
	tests := []struct {
		name   string
		cfg    AuthConfig
		header string
		ok     bool
	}{
		{"HS256 with the secret", both, sign(jwt.SigningMethodHS256, []byte("s3cret")), true},
		{"RS256 with the private key", both, sign(jwt.SigningMethodRS256, rsaKey), true},
		{"HS256 with the wrong secret", both, sign(jwt.SigningMethodHS256, []byte("other")), false},
		{"RS256 from another key", both, sign(jwt.SigningMethodRS256, otherRSA), false},
		{"HS256 signed with the public key's PEM", both, sign(jwt.SigningMethodHS256, rsaPubPEM), false},
		{"HS384 with the secret", both, sign(jwt.SigningMethodHS384, []byte("s3cret")), false},
		{"ES256 when the public key is RSA", both, sign(jwt.SigningMethodES256, ecKey), false},
		{"alg none", both, "Bearer " + none, false},
		{"RS256 when only a secret is set", AuthConfig{JWTSecret: "s3cret"}, sign(jwt.SigningMethodRS256, rsaKey), false},
		{"a JWT when no JWT key is set", AuthConfig{Keys: map[string]string{"api_key": "k"}}, sign(jwt.SigningMethodHS256, []byte("s3cret")), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := newAuthenticator(tc.cfg)
			require.NoError(t, err)
			client, err := a.identify(tc.header)
			if !tc.ok {
				require.ErrorIs(t, err, errBadCredentials)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "jwt:bob", client)
		})
	}
}
