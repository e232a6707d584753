package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// Every field a catalogue policy refuses is one the server can tell is set: a name it does
// not know would be accepted and ignored.
func TestCatalogueRefusedFieldsAreChecked(t *testing.T) {
	known := imageFieldsSet(&runners.ImageRequest{})
	for _, m := range catalogue.Models() {
		for _, f := range m.Image.Unused {
			require.Contains(t, known, f.Name, "%s refuses %s", m.Name, f.Name)
		}
		for _, f := range m.Image.PythonUnused {
			require.Contains(t, known, f, "%s (python road) refuses %s", m.Name, f)
		}
	}
}
