package t5

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A CHAR model (SpeechT5's spm_char.model layout: <s> 0, <pad> 1, </s> 2, <unk> 3) gives one id
// per normalized character, one unknown per run of unknown characters, and </s>.
func TestCharModel(t *testing.T) {
	m := testModel{pieces: []testPiece{{"<s>", 0, typeControl}, {"<pad>", 0, typeControl}, {"</s>", 0, typeControl},
		{"<unk>", 0, typeUnknown}, {"▁", -1, typeNormal}, {"a", -2, typeNormal}, {"b", -3, typeNormal}, {"é", -4, typeNormal},
		{"[X]", 0, typeUserDefined}},
		modelType: modelChar, setIDs: true, unk: 3, eos: 2, pad: 1}
	tok, err := Parse(m.bytes())
	require.NoError(t, err)
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"ab", []int{4, 5, 6, 2}},
		{"  a   b ", []int{4, 5, 4, 6, 2}},
		{"zz", []int{4, 3, 2}},
		{"zaz", []int{4, 3, 5, 3, 2}},
		{"é[X]a", []int{4, 7, 8, 5, 2}},
		{"", []int{2}},
	} {
		require.Equal(t, tc.want, tok.Encode(tc.in), tc.in)
	}
	require.Equal(t, 1, tok.PadID())

	m.modelType = 2 // BPE
	_, err = Parse(m.bytes())
	require.ErrorIs(t, err, ErrUnsupported)
}
