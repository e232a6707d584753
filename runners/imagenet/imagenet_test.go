package imagenet

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

func TestLabels(t *testing.T) {
	labels := Labels()
	require.Len(t, labels, NumClasses)
	require.Equal(t, "tench", labels[0])
	require.Equal(t, "toilet tissue", labels[999])
	seen := map[string]bool{}
	for i, l := range labels {
		require.NotEmpty(t, l, "label %d", i)
		require.False(t, seen[l], "duplicate label %q", l)
		seen[l] = true
	}
	labels[0] = "changed"
	require.Equal(t, "tench", Labels()[0], "a copy")
}

func TestLabel(t *testing.T) {
	tests := []struct {
		i    int
		want string
	}{
		{0, "tench"},
		{134, "crane bird"},
		{207, "golden retriever"},
		{999, "toilet tissue"},
		{-1, ""},
		{1000, ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Label(tt.i), "class %d", tt.i)
	}
}

// TestLabelsMatchReference compares the embedded torchvision list with the shared reference
// list (pytorch/hub imagenet_classes.txt). torchvision renames the two duplicated ILSVRC
// names; every other entry must be identical.
func TestLabelsMatchReference(t *testing.T) {
	data, err := os.ReadFile(shareddata.File(t, "resnet", "imagenet_classes.json"))
	require.NoError(t, err)
	var ref []string
	require.NoError(t, json.Unmarshal(data, &ref))
	require.Len(t, ref, NumClasses)
	renamed := map[int][2]string{134: {"crane", "crane bird"}, 639: {"maillot", "maillot tank suit"}}
	labels := Labels()
	for i := range ref {
		if rn, ok := renamed[i]; ok {
			require.Equal(t, rn[0], ref[i], "reference %d", i)
			require.Equal(t, rn[1], labels[i], "embedded %d", i)
			continue
		}
		require.Equal(t, ref[i], labels[i], "class %d", i)
	}
}
