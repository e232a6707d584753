package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// maxTokenLen bounds bearer credentials before any parsing (a JWT of ours is ~150 bytes).
const maxTokenLen = 8 << 10

// authenticator checks "Authorization: Bearer <credential>": the static API_KEY, compared in
// constant time, or — when JWT_SECRET is set — an HS256 JWT signed with it.
type authenticator struct {
	keyHash    [32]byte
	hasKey     bool
	jwtSecret  []byte
	requireExp bool
}

func newAuthenticator(apiKey, jwtSecret string, requireExp bool) *authenticator {
	a := &authenticator{hasKey: apiKey != "", requireExp: requireExp}
	a.keyHash = sha256.Sum256([]byte(apiKey))
	if jwtSecret != "" {
		a.jwtSecret = []byte(jwtSecret)
	}
	return a
}

var (
	errNoCredentials  = errors.New("Not authenticated")
	errBadCredentials = errors.New("Invalid or missing API Key")
)

// check validates an Authorization header value.
func (a *authenticator) check(header string) error {
	_, err := a.identify(header)
	return err
}

// identify validates an Authorization header value and names the client it belongs to (for
// fair queueing): "api_key" for the static key, or the JWT's sub (else token_id) claim.
func (a *authenticator) identify(header string) (string, error) {
	if header == "" {
		return "", errNoCredentials
	}
	const prefix = "Bearer "
	if len(header) > maxTokenLen || !strings.HasPrefix(header, prefix) {
		return "", errBadCredentials
	}
	cred := header[len(prefix):]
	// Hashing first makes the comparison constant-time whatever the lengths.
	if a.hasKey {
		h := sha256.Sum256([]byte(cred))
		if subtle.ConstantTimeCompare(h[:], a.keyHash[:]) == 1 {
			return "api_key", nil
		}
	}
	if a.jwtSecret != nil && strings.Count(cred, ".") == 2 {
		opts := []jwt.ParserOption{
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithLeeway(30 * time.Second),
		}
		if a.requireExp {
			opts = append(opts, jwt.WithExpirationRequired())
		}
		claims := jwt.MapClaims{}
		_, err := jwt.ParseWithClaims(cred, claims, func(*jwt.Token) (any, error) { return a.jwtSecret, nil }, opts...)
		if err == nil {
			for _, k := range []string{"sub", "token_id"} {
				if v, ok := claims[k].(string); ok && v != "" {
					return "jwt:" + v, nil
				}
			}
			return "jwt", nil
		}
	}
	return "", errBadCredentials
}

// requireAuth rejects requests without valid credentials with 401.
func (s *Server) requireAuth() gin.HandlerFunc {
	return func(c *gin.Context) {
		client, err := s.auth.identify(c.GetHeader("Authorization"))
		if err != nil {
			c.Header("WWW-Authenticate", `Bearer realm="tt-media-server"`)
			c.Error(err) //nolint:errcheck // recorded for the access log
			c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"detail": err.Error()})
			return
		}
		c.Request = c.Request.WithContext(scheduler.WithClient(c.Request.Context(), client))
		c.Next()
	}
}
