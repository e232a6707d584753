package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDotenv(t *testing.T) {
	text := strings.Join([]string{
		"# comment",
		"",
		"PLAIN=value",
		"SPACED = spaced value  ",
		"export EXPORTED=1",
		"export\tTABBED=2",
		"exported_lower=3",
		"EMPTY=",
		"SINGLE='it is # not a comment'",
		`DOUBLE="a \"quoted\" line\nnext"`,
		`DQ_COMMENT="x" # trailing`,
		"SQ_COMMENT='y'   # trailing",
		"INLINE=abc # comment",
		"HASH=abc#not-a-comment",
		"EQUALS=a=b=c",
		"DUP=first",
		"DUP=second",
		"WIN=crlf\r",
		"  INDENTED=ok",
		"DEVICE_IDS=\"(0,1),(2,3)\"",
		"BACKSLASH='C:\\path'",
		`UNKNOWN_ESC="a\qb"`,
	}, "\n")
	got, err := parseDotenv(text)
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"PLAIN":          "value",
		"SPACED":         "spaced value",
		"EXPORTED":       "1",
		"TABBED":         "2",
		"EXPORTED_LOWER": "3",
		"EMPTY":          "",
		"SINGLE":         "it is # not a comment",
		"DOUBLE":         "a \"quoted\" line\nnext",
		"DQ_COMMENT":     "x",
		"SQ_COMMENT":     "y",
		"INLINE":         "abc",
		"HASH":           "abc#not-a-comment",
		"EQUALS":         "a=b=c",
		"DUP":            "second",
		"WIN":            "crlf",
		"INDENTED":       "ok",
		"DEVICE_IDS":     "(0,1),(2,3)",
		"BACKSLASH":      `C:\path`,
		"UNKNOWN_ESC":    `a\qb`,
	}, got)
}

func TestParseDotenvSingleQuoteTrailing(t *testing.T) {
	// 'it''s …' closes after "it"; what follows is not a comment, so it is an error.
	_, err := parseDotenv("SINGLE='it''s'")
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, `.env line 1 (SINGLE): unexpected "'s'" after closing quote`)
}

func TestParseDotenvErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"OK=1\nNOEQUALS", `.env line 2: expected KEY=VALUE, got "NOEQUALS"`},
		{"=value", `.env line 1: expected KEY=VALUE, got "=value"`},
		{"BAD KEY=1", `.env line 1: expected KEY=VALUE, got "BAD KEY=1"`},
		{"1KEY=1", `.env line 1: expected KEY=VALUE`},
		{`A="open`, `.env line 1 (A): unterminated double quote`},
		{`A='open`, `.env line 1 (A): unterminated single quote`},
		{`A="x" y`, `.env line 1 (A): unexpected "y" after closing quote`},
		{"export", `.env line 1: expected KEY=VALUE, got "export"`},
	}
	for _, tt := range tests {
		_, err := parseDotenv(tt.text)
		require.ErrorIs(t, err, ErrInvalid, tt.text)
		require.ErrorContains(t, err, tt.want, tt.text)
	}
}

// FuzzParseDotenv checks that the parser never panics and that keys come back upper-cased.
func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1", "export B='x'", `C="a\nb" # c`, "# only\n\nD=", "E", `F="`, "G=h # i"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := parseDotenv(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		for k := range vals {
			require.Equal(t, strings.ToUpper(k), k)
			require.True(t, validDotenvKey(k), k)
		}
	})
}
