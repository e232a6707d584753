package speecht5tokenizer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// A character model trained by Debian's spm_train: Encode gives spm_encode's ids and </s>
// (scripts/ensure-speecht5-goldens.sh).
func TestEncodeMatchesSentencePiece(t *testing.T) {
	dir := shareddata.Generated(t, "speecht5", "run scripts/ensure-speecht5-goldens.sh")
	data, err := os.ReadFile(filepath.Join(dir, "spm_char.model"))
	require.NoError(t, err)
	tok, err := Parse(data)
	require.NoError(t, err)
	lines := readLines(t, filepath.Join(dir, "spm_lines.txt"))
	ids := readLines(t, filepath.Join(dir, "spm_ids.txt"))
	require.Len(t, ids, len(lines))
	for i, line := range lines {
		var want []int
		for _, f := range strings.Fields(ids[i]) {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			want = append(want, n)
		}
		require.Equal(t, append(want, 2), tok.Encode(line), "%q", line)
	}
}

func readLines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestBuiltinAndPad(t *testing.T) {
	tok := Builtin()
	require.Equal(t, []int{4, 4 + int('H'-' '), 4 + int('i'-' '), 4, 4 + int('x'-' '), 2}, tok.Encode("  Hi \t x "))
	ids, mask, err := Pad(tok.Encode("Hi"))
	require.NoError(t, err)
	require.Len(t, ids, 32)
	require.Equal(t, int32(PadID), ids[31])
	require.Equal(t, float32(-1e9), mask[31])
	require.Zero(t, mask[0])
	_, _, err = Pad(make([]int, 257))
	require.ErrorIs(t, err, ErrTooLong)
}
