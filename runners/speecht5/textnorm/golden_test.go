package textnorm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// goldens is scripts/ensure-speecht5-goldens.sh's text.json: HEAD's own normalize_text_for_tts
// and chunk_text run on Debian's python3-num2words.
type goldens struct {
	Normalize []struct {
		In, Out, Error string
	} `json:"normalize"`
	Chunk []struct {
		In        string   `json:"in"`
		Processor string   `json:"processor"`
		Chunks    []string `json:"chunks"`
	} `json:"chunk"`
}

func loadGoldens(t *testing.T) goldens {
	dir := shareddata.Generated(t, "speecht5", "run scripts/ensure-speecht5-goldens.sh")
	data, err := os.ReadFile(filepath.Join(dir, "text.json"))
	require.NoError(t, err)
	var g goldens
	require.NoError(t, json.Unmarshal(data, &g))
	require.NotEmpty(t, g.Normalize)
	require.NotEmpty(t, g.Chunk)
	return g
}

func TestNormalizeMatchesHEAD(t *testing.T) {
	for _, c := range loadGoldens(t).Normalize {
		if c.Error != "" { // HEAD fails on it (a number beyond num2words): we keep the digits
			continue
		}
		require.Equal(t, c.Out, Normalize(c.In), c.In)
	}
}

func TestChunkMatchesHEAD(t *testing.T) {
	headCount := func(s string) int { return len([]rune(s)) + 2 } // the golden's CountProcessor
	for _, c := range loadGoldens(t).Chunk {
		var count func(string) int
		if c.Processor == "count" {
			count = headCount
		}
		require.Equal(t, c.Chunks, Chunk(c.In, DefaultChunkSize, count), "%s processor, %.60q", c.Processor, c.In)
	}
}
