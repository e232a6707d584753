package server

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// maxTokenLen bounds bearer credentials before any parsing (a JWT of ours is ~150 bytes).
const maxTokenLen = 8 << 10

// jwtLeeway tolerates clock skew on exp and nbf.
const jwtLeeway = 30 * time.Second

// AuthConfig says which credentials are accepted.
type AuthConfig struct {
	// Keys maps a client name to its API key ("api_key" → API_KEY, plus API_KEYS entries).
	Keys map[string]string
	// AdminKey, when set, is the only key accepted on the maintenance routes.
	AdminKey string
	// JWTSecret enables HS256 tokens signed with it.
	JWTSecret string
	// JWTPublicKey (*rsa.PublicKey or *ecdsa.PublicKey) enables RS256 or ES256 tokens.
	JWTPublicKey any
	// JWTRequireExp refuses tokens without exp; JWTIssuer and JWTAudience, when set, must match.
	JWTRequireExp bool
	JWTIssuer     string
	JWTAudience   string
}

// authConfigOf is the one place the accepted credentials are derived from the settings:
// API_KEY as "api_key" plus API_KEYS / API_KEYS_FILE (config.Settings.APIKeys), ADMIN_API_KEY,
// JWT_SECRET, the parsed JWT_PUBLIC_KEY_FILE and the JWT claims checks.
func authConfigOf(s *config.Settings) AuthConfig {
	keys := s.APIKeys
	if keys == nil { // settings built by hand (tests): API_KEY alone
		keys = map[string]string{"api_key": s.APIKey}
	}
	return AuthConfig{
		Keys: keys, AdminKey: s.AdminAPIKey, JWTSecret: s.JWTSecret,
		JWTPublicKey: s.JWTPublicKey, JWTRequireExp: s.JWTRequireExp,
		JWTIssuer: s.JWTIssuer, JWTAudience: s.JWTAudience,
	}
}

// authenticator checks "Authorization: Bearer <credential>": a named API key, compared in
// constant time, or a JWT whose algorithm is pinned by the key it is checked with (HS256 for
// JWT_SECRET; RS256 or ES256 for a public key), so alg "none" and HS/RS confusion cannot pass.
type authenticator struct {
	keys     []namedKey
	admin    *[32]byte
	hsSecret []byte
	pubKey   any
	pubAlg   string
	// parser accepts exactly the algorithms of the configured keys; keyFor hands each
	// algorithm its own key. Both are built once (a Parser is safe for concurrent use), and a
	// token is parsed once whichever key it is for.
	parser *jwt.Parser
	keyFor jwt.Keyfunc
}

type namedKey struct {
	name string
	hash [32]byte
}

func newAuthenticator(c AuthConfig) (*authenticator, error) {
	a := &authenticator{}
	for name, key := range c.Keys {
		if key == "" {
			continue
		}
		a.keys = append(a.keys, namedKey{name: name, hash: sha256.Sum256([]byte(key))})
	}
	if c.AdminKey != "" {
		h := sha256.Sum256([]byte(c.AdminKey))
		a.admin = &h
	}
	if c.JWTSecret != "" {
		a.hsSecret = []byte(c.JWTSecret)
	}
	switch k := c.JWTPublicKey.(type) {
	case nil:
	case *rsa.PublicKey:
		a.pubKey, a.pubAlg = k, jwt.SigningMethodRS256.Alg()
	case *ecdsa.PublicKey:
		a.pubKey, a.pubAlg = k, jwt.SigningMethodES256.Alg()
	default:
		return nil, fmt.Errorf("JWT public key of type %T is not supported (RSA or ECDSA P-256)", k)
	}
	var algs []string
	if a.hsSecret != nil {
		algs = append(algs, jwt.SigningMethodHS256.Alg())
	}
	if a.pubKey != nil {
		algs = append(algs, a.pubAlg)
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(algs), jwt.WithLeeway(jwtLeeway)}
	if c.JWTRequireExp {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	if c.JWTIssuer != "" {
		opts = append(opts, jwt.WithIssuer(c.JWTIssuer))
	}
	if c.JWTAudience != "" {
		opts = append(opts, jwt.WithAudience(c.JWTAudience))
	}
	a.parser = jwt.NewParser(opts...)
	a.keyFor = a.jwtKey
	return a, nil
}

var (
	errNoCredentials  = errors.New("Not authenticated")          //nolint:staticcheck // FastAPI's exact detail text
	errBadCredentials = errors.New("Invalid or missing API Key") //nolint:staticcheck // the Python server's exact detail text
	errNotAdmin       = errors.New("this route needs the admin key (ADMIN_API_KEY)")
)

// bearer extracts the credential of an Authorization header: the scheme "Bearer" in any case
// (bearer, BEARER: auth schemes are case-insensitive, RFC 7235 §2.1), then one space.
func bearer(header string) (string, error) {
	if header == "" {
		return "", errNoCredentials
	}
	const scheme = "Bearer "
	if len(header) > maxTokenLen || len(header) < len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", errBadCredentials
	}
	return header[len(scheme):], nil
}

// check validates an Authorization header value.
func (a *authenticator) check(header string) error {
	_, err := a.identify(header)
	return err
}

// identify validates an Authorization header value and names the client it belongs to (for
// fair queueing, rate limits and logs): the API key's name ("api_key" for API_KEY), or
// "jwt:" + the token's sub (else token_id) claim.
func (a *authenticator) identify(header string) (string, error) {
	cred, err := bearer(header)
	if err != nil {
		return "", err
	}
	// Hashing first makes each comparison constant-time whatever the lengths; every key is
	// compared so the time does not depend on which one matched.
	h := sha256.Sum256([]byte(cred))
	match := ""
	for _, k := range a.keys {
		if subtle.ConstantTimeCompare(h[:], k.hash[:]) == 1 {
			match = k.name
		}
	}
	if match != "" {
		return match, nil
	}
	if strings.Count(cred, ".") == 2 {
		if client, ok := a.verifyJWT(cred); ok {
			return client, nil
		}
	}
	return "", errBadCredentials
}

// errNoJWTKey: the token's algorithm has no configured key (the parser's method list already
// refuses it; this keeps the key lookup total).
var errNoJWTKey = errors.New("no key for the token's algorithm")

// jwtKey pins each algorithm to its key: the JWT_SECRET for HS256 only, the public key for its
// own algorithm only, so alg "none" and HS/RS confusion cannot pass.
func (a *authenticator) jwtKey(t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	switch {
	case a.hsSecret != nil && alg == jwt.SigningMethodHS256.Alg():
		return a.hsSecret, nil
	case a.pubKey != nil && alg == a.pubAlg:
		return a.pubKey, nil
	}
	return nil, errNoJWTKey
}

// verifyJWT checks a token against the key of its algorithm and names its client: "jwt:" +
// sub (else token_id), or "jwt".
func (a *authenticator) verifyJWT(token string) (string, bool) {
	if a.hsSecret == nil && a.pubKey == nil {
		return "", false
	}
	claims := jwt.MapClaims{}
	if _, err := a.parser.ParseWithClaims(token, claims, a.keyFor); err != nil {
		return "", false
	}
	for _, k := range []string{"sub", "token_id"} {
		if v, ok := claims[k].(string); ok && v != "" {
			return "jwt:" + v, true
		}
	}
	return "jwt", true
}

// checkAdmin validates the admin key (maintenance routes when ADMIN_API_KEY is set).
func (a *authenticator) checkAdmin(header string) error {
	cred, err := bearer(header)
	if err != nil {
		return err
	}
	h := sha256.Sum256([]byte(cred))
	if subtle.ConstantTimeCompare(h[:], a.admin[:]) != 1 {
		return errNotAdmin
	}
	return nil
}

// unauthorized answers a Python-dialect route's 401: {"detail": why}.
func (s *Server) unauthorized(c *gin.Context, err error) {
	c.Header("WWW-Authenticate", `Bearer realm="tt-media-server"`)
	s.fail(c, dialectPython, &apiError{status: http.StatusUnauthorized, msg: err.Error()})
}

// requireAuth rejects requests without valid credentials with 401 and tags the request with
// its client.
func (s *Server) requireAuth() gin.HandlerFunc {
	return func(c *gin.Context) {
		client, err := s.identify(c)
		if err != nil {
			s.unauthorized(c, err)
			return
		}
		c.Set(clientKey, client)
		c.Request = c.Request.WithContext(scheduler.WithClient(c.Request.Context(), client))
		c.Next()
	}
}

// requireAdmin guards the maintenance routes: the admin key when ADMIN_API_KEY is set,
// otherwise any valid credential.
func (s *Server) requireAdmin() gin.HandlerFunc {
	if s.auth.admin == nil { // NO_AUTH opens them too, unless ADMIN_API_KEY guards them
		return s.requireAuth()
	}
	return func(c *gin.Context) {
		if err := s.auth.checkAdmin(c.GetHeader("Authorization")); err != nil {
			s.unauthorized(c, err)
			return
		}
		c.Set(clientKey, "admin")
		c.Next()
	}
}

const clientKey = "client"

// anonymousClient is the client of a request without valid credentials under NO_AUTH.
const anonymousClient = "anonymous"

// identify names the request's client from its Authorization header. With NO_AUTH (HEAD's
// switch) no credential is needed: a valid one still names the client (fair share, logs),
// anything else is the anonymous client.
func (s *Server) identify(c *gin.Context) (string, error) {
	client, err := s.auth.identify(c.GetHeader("Authorization"))
	if err != nil && s.cfg.NoAuth {
		return anonymousClient, nil
	}
	return client, err
}
