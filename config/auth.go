package config

import (
	"bufio"
	"crypto/elliptic"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// loadAuth builds the named API keys (API_KEY as "api_key", API_KEYS, API_KEYS_FILE) and parses
// the JWT public key, so that a bad key file fails at start-up.
func loadAuth(s *Settings, apiKeys string) error {
	s.APIKeys = map[string]string{}
	if s.APIKey != "" {
		s.APIKeys["api_key"] = s.APIKey
	}
	add := func(source, name, key string) error {
		name, key = strings.TrimSpace(name), strings.TrimSpace(key)
		if name == "" || key == "" || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("an entry is not name=key with a non-empty name and key")
		}
		if _, dup := s.APIKeys[name]; dup {
			return fmt.Errorf("client name %q is used twice", name)
		}
		if len(key) < 8 {
			return fmt.Errorf("the key of %q is shorter than 8 characters", name)
		}
		s.APIKeys[name] = key
		return nil
	}
	for _, part := range strings.Split(apiKeys, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		name, key, ok := strings.Cut(part, "=")
		if !ok {
			return invalid("API_KEYS", "***", "expected name=key pairs separated by commas")
		}
		if err := add("API_KEYS", name, key); err != nil {
			return invalid("API_KEYS", "***", "%v", err)
		}
	}
	if s.APIKeysFile != "" {
		f, err := os.Open(s.APIKeysFile)
		if err != nil {
			return invalid("API_KEYS_FILE", s.APIKeysFile, "cannot read it: %v", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			name, key, ok := strings.Cut(text, "=")
			if !ok {
				return invalid("API_KEYS_FILE", s.APIKeysFile, "line %d is not name=key", line)
			}
			if err := add("API_KEYS_FILE", name, key); err != nil {
				return invalid("API_KEYS_FILE", s.APIKeysFile, "line %d: %v", line, err)
			}
		}
		if err := sc.Err(); err != nil {
			return invalid("API_KEYS_FILE", s.APIKeysFile, "cannot read it: %v", err)
		}
	}
	if s.JWTPublicKeyFile != "" {
		pem, err := os.ReadFile(s.JWTPublicKeyFile)
		if err != nil {
			return invalid("JWT_PUBLIC_KEY_FILE", s.JWTPublicKeyFile, "cannot read it: %v", err)
		}
		if k, err := jwt.ParseRSAPublicKeyFromPEM(pem); err == nil {
			if k.N.BitLen() < 2048 {
				return invalid("JWT_PUBLIC_KEY_FILE", s.JWTPublicKeyFile, "RSA key has %d bits; at least 2048 are required", k.N.BitLen())
			}
			s.JWTPublicKey = k
		} else if k, err := jwt.ParseECPublicKeyFromPEM(pem); err == nil {
			if k.Curve != elliptic.P256() {
				return invalid("JWT_PUBLIC_KEY_FILE", s.JWTPublicKeyFile, "EC key must be on P-256 (ES256)")
			}
			s.JWTPublicKey = k
		} else {
			return invalid("JWT_PUBLIC_KEY_FILE", s.JWTPublicKeyFile, "not a PEM RSA or EC public key")
		}
	}
	if s.RateLimit < 0 {
		return invalid("RATE_LIMIT_PER_SECOND", fmt.Sprint(s.RateLimit), "must be >= 0")
	}
	if s.RateBurst < 0 {
		return invalid("RATE_LIMIT_BURST", fmt.Sprint(s.RateBurst), "must be >= 0")
	}
	return nil
}

func redactKeys(keys map[string]string) string {
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n+"=***")
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
