package t5

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNextGrapheme(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want string // the first cluster
	}{
		{"ascii", "ab", "a"},
		{"combining marks extend", "e\u0301\u0308x", "e\u0301\u0308"},
		{"CR LF", "\r\nx", "\r\n"},
		{"lone CR", "\rx", "\r"},
		{"control breaks before marks", "\t\u0301", "\t"},
		{"Hangul jamo L V T", "\u1100\u1161\u11a8x", "\u1100\u1161\u11a8"},
		{"Hangul LV syllable + T", "\uac00\u11a8x", "\uac00\u11a8"},
		{"Hangul LVT syllable stops at V", "\uac01\u1161", "\uac01"},
		{"flag pairs", "🇯🇵🇺🇸", "🇯🇵"},
		{"emoji ZWJ sequence", "👩\u200d💻x", "👩\u200d💻"},
		{"skin tone modifier", "👍🏽x", "👍🏽"},
		{"ZWJ after letter does not join a letter", "a\u200db", "a\u200d"},
		{"Thai sara am is a spacing mark", "กำx", "กำ"},
		{"half-width voiced mark extends", "ｶﾞx", "ｶﾞ"},
		{"variation selector extends", "\u2764\ufe0fx", "\u2764\ufe0f"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.s[:nextGrapheme(tc.s)])
		})
	}
}
