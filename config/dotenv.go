package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// readDotenv reads a .env file into a map keyed by the upper-cased variable name (keys match
// case-insensitively, as pydantic-settings matches them). A missing file is an empty map.
func readDotenv(path string) (map[string]string, error) {
	if path == "" {
		return map[string]string{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: reading %s: %w", path, err)
	}
	vals, err := parseDotenv(string(data))
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return vals, nil
}

// parseDotenv parses KEY=VALUE lines: blank lines and lines starting with # are skipped; an
// "export " prefix is allowed; a value may be 'single-quoted' (literal), "double-quoted"
// (with \n \t \" \\ escapes) or bare (trimmed, and cut at " #", a trailing comment). A later
// line for the same key wins. Malformed lines are errors (wrapping ErrInvalid) that give the
// line number.
func parseDotenv(text string) (map[string]string, error) {
	vals := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !validDotenvKey(key) {
			return nil, fmt.Errorf("%w: .env line %d: expected KEY=VALUE, got %q", ErrInvalid, n, line)
		}
		v, err := dotenvValue(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%w: .env line %d (%s): %v", ErrInvalid, n, key, err)
		}
		vals[strings.ToUpper(key)] = v
	}
	return vals, nil
}

func validDotenvKey(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '.' || r == '-'):
		default:
			return false
		}
	}
	return true
}

func dotenvValue(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	switch v[0] {
	case '\'':
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", errors.New("unterminated single quote")
		}
		if err := trailingComment(v[end+2:]); err != nil {
			return "", err
		}
		return v[1 : end+1], nil
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case '"', '\\', '\'':
					b.WriteByte(v[i])
				default:
					b.WriteByte('\\')
					b.WriteByte(v[i])
				}
			case c == '"':
				if err := trailingComment(v[i+1:]); err != nil {
					return "", err
				}
				return b.String(), nil
			default:
				b.WriteByte(c)
			}
		}
		return "", errors.New("unterminated double quote")
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	} else if i := strings.Index(v, "\t#"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v), nil
}

// trailingComment accepts what may follow a closing quote: nothing, or a # comment.
func trailingComment(rest string) error {
	rest = strings.TrimSpace(rest)
	if rest == "" || rest[0] == '#' {
		return nil
	}
	return fmt.Errorf("unexpected %q after closing quote", rest)
}
