package umt5

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
)

type golden struct {
	Model  string `json:"model"`
	PadID  int    `json:"pad_id"`
	EOSID  int    `json:"eos_id"`
	MaxLen int    `json:"max_sequence_length"`
	Cases  []struct {
		Text    string `json:"text"`
		Cleaned string `json:"cleaned"`
		IDs     []int  `json:"ids"`
	} `json:"cases"`
}

func readGolden(t *testing.T) (golden, *Tokenizer) {
	t.Helper()
	var g golden
	wangolden.Read(t, "umt5.json", &g)
	require.NotEmpty(t, g.Cases)
	tok, err := Load(wangolden.Path(t, g.Model))
	require.NoError(t, err)
	return g, tok
}

// TestCleanGolden: prompt_clean of pipeline_wan.py (run by the golden script with the regex
// module) on entities, double escapes, Unicode spaces, tabs and newlines.
func TestCleanGolden(t *testing.T) {
	g, _ := readGolden(t)
	for _, c := range g.Cases {
		require.Equal(t, c.Cleaned, Clean(c.Text), "%q", c.Text)
	}
}

// TestEncodeGolden: the cleaned prompt's ids equal sentencepiece's encode on the same model;
// Encode appends </s> and pads to 512 with the mask and seq_len WanPipeline derives, and a
// prompt longer than 512 tokens keeps 511 pieces and </s>.
func TestEncodeGolden(t *testing.T) {
	g, tok := readGolden(t)
	require.Equal(t, MaxLength, g.MaxLen)
	require.Equal(t, g.PadID, tok.PadID())
	long := false
	for _, c := range g.Cases {
		require.Equal(t, c.IDs, nonNil(tok.Pieces(c.Text)), "%q", c.Text)
		enc := tok.Encode(c.Text)
		require.Len(t, enc.IDs, MaxLength)
		want := append(append([]int{}, c.IDs...), g.EOSID)
		if len(want) > MaxLength {
			want = append(want[:MaxLength-1:MaxLength-1], g.EOSID)
			long = true
		}
		require.Equal(t, len(want), enc.SeqLen)
		require.Equal(t, want, enc.IDs[:enc.SeqLen])
		for i := range MaxLength {
			if i < enc.SeqLen {
				require.Equal(t, 1, enc.Mask[i])
			} else {
				require.Equal(t, 0, enc.Mask[i])
				require.Equal(t, g.PadID, enc.IDs[i])
			}
		}
	}
	require.True(t, long, "one golden text is longer than 512 tokens")
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

func TestNewRefused(t *testing.T) {
	_, err := New(nil, 512)
	require.ErrorContains(t, err, "positive length")
	_, err = Load(filepath.Join(t.TempDir(), "absent.model"))
	require.ErrorContains(t, err, "umt5 tokenizer")
}
