package decoding

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPyTail(t *testing.T) {
	s := []int{1, 2, 3, 4}
	// python3 -c "s=[1,2,3,4]; print(s[-2:], s[-0:], s[-9:], s[--1:], s[--9:])"
	require.Equal(t, []int{3, 4}, pyTail(s, 2))
	require.Equal(t, []int{1, 2, 3, 4}, pyTail(s, 0))
	require.Equal(t, []int{1, 2, 3, 4}, pyTail(s, 9))
	require.Equal(t, []int{2, 3, 4}, pyTail(s, -1))
	require.Empty(t, pyTail(s, -9))
}

func TestInitialTokens(t *testing.T) {
	tok := testTokenizer(t, multi99)
	sot, err := tok.SOTSequence("en", "transcribe", false)
	require.NoError(t, err)
	// " The quick brown fox jumps over the lazy dog." from the golden multilingual ids.
	require.Equal(t, []int{440, 1702, 6292, 21026, 16704, 670, 264, 14847, 3000, 13},
		TextPromptTokens(tok, "  The quick brown fox jumps over the lazy dog.\n"))
	require.Nil(t, TextPromptTokens(tok, " \t"))

	prompt := make([]int, 300)
	for i := range prompt {
		prompt[i] = 1000 + i
	}
	// n_text_ctx 448: the prompt keeps its last 448//2 - 1 = 223 tokens after <|startofprev|>.
	got := InitialTokens(tok, sot, prompt, nil, 448, 224)
	require.Len(t, got, 1+223+3)
	require.Equal(t, tok.SOTPrev(), got[0])
	require.Equal(t, 1000+300-223, got[1])
	require.Equal(t, sot, got[224:])

	// Prefix with the default sample_len 224: max_prefix_len = 0 and prefix[-0:] keeps all.
	got = InitialTokens(tok, sot, nil, []int{440, 1702}, 448, 224)
	require.Equal(t, append(append([]int{}, sot...), 440, 1702), got)
	// sample_len 223: max_prefix_len 1 -> the last prefix token.
	got = InitialTokens(tok, sot, []int{5}, []int{440, 1702}, 448, 223)
	require.Equal(t, append(append([]int{tok.SOTPrev(), 5}, sot...), 1702), got)
	// No prompt and no prefix: the sot sequence alone.
	require.Equal(t, sot, InitialTokens(tok, sot, nil, nil, 448, 224))
}
