package python

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// TestRunnersMatchTheCatalogue: tt_worker.py's RUNNERS has one entry per catalogued runner,
// naming the class HEAD's runner_fabric builds for it (the catalogue's PythonClass), and no other.
func TestRunnersMatchTheCatalogue(t *testing.T) {
	src, err := os.ReadFile(Script)
	require.NoError(t, err)
	entries := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^    "(tt-[\w.-]+)": \("([\w.]+)", "(\w+)"\),$`).FindAllSubmatch(src, -1) {
		entries[string(m[1])] = string(m[2]) + "." + string(m[3])
	}
	require.NotEmpty(t, entries, "RUNNERS did not parse")
	want := map[string]string{}
	for _, m := range catalogue.Models() {
		want[m.Name] = m.PythonClass
	}
	require.Equal(t, want, entries)
}
