package whispertokenizer

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// byteRanks is a minimal valid table: the 256 single bytes with ranks 0..255.
func byteRanks() string {
	var sb strings.Builder
	for b := range 256 {
		fmt.Fprintf(&sb, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	return sb.String()
}

func TestLoadRanks(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		text    string
		wantLen int
		wantErr bool
	}{
		{"bytes only", byteRanks(), 256, false},
		{"with merges and blank lines", byteRanks() + "\n" + b64("ab") + " 256\n\n" + b64("abc") + " 257\n", 258, false},
		{"empty", "", 0, true},
		{"one field", "YQ==\n", 0, true},
		{"padding only is the empty token", byteRanks() + "= 256\n", 257, false},
		{"missing padding", byteRanks() + "YWI 256\n", 0, true},
		{"bad base64", byteRanks() + "!!! 256\n", 0, true},
		{"bad rank", byteRanks() + b64("ab") + " x\n", 0, true},
		{"negative rank", byteRanks() + b64("ab") + " -3\n", 0, true},
		{"duplicate token", byteRanks() + b64("a") + " 256\n", 0, true},
		{"duplicate rank", byteRanks() + b64("ab") + " 255\n", 0, true},
		{"gap in ranks", byteRanks() + b64("ab") + " 257\n", 0, true},
		{"missing byte", strings.SplitN(byteRanks(), "\n", 2)[1], 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := LoadRanks(strings.NewReader(tc.text))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrBadRanks)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantLen, r.Len())
		})
	}
	_, err := LoadRanksFile("/nonexistent/file.tiktoken")
	require.Error(t, err)
}

// A hand-made table where merge order matters: with ranks "bc"=256, "ab"=257, "abc"=258
// the piece "abc" is in the table whole; "abcd" is not, so pairs merge lowest rank first:
// "bc" (256) before "ab" (257) gives [a, bc, d], and then "abc" (258) is not a pair of the
// remaining parts (a+bc is, and it is "abc" = 258) -> [abc, d].
// For "aaaa" with "aa"=256, ties are broken leftmost: [aa, aa].
func TestBytePairMergeOrder(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	table := byteRanks() + b64("bc") + " 256\n" + b64("ab") + " 257\n" + b64("abc") + " 258\n" + b64("aa") + " 259\n" + b64("cd") + " 260\n"
	r, err := LoadRanks(strings.NewReader(table))
	require.NoError(t, err)
	tests := []struct {
		piece string
		want  []int
	}{
		{"abc", []int{258}},
		{"abcd", []int{258, 'd'}},
		// "bcd": "bc"=256 beats "cd"=260 -> [bc, d].
		{"bcd", []int{256, 'd'}},
		{"aaaa", []int{259, 259}},
		{"aaa", []int{259, 'a'}},
		{"xyz", []int{'x', 'y', 'z'}},
	}
	for _, tc := range tests {
		got := r.encodeOrdinary(tc.piece, nil)
		require.Equal(t, tc.want, got, tc.piece)
	}
}
