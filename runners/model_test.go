package runners

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every program a catalogued model names is declared once in runners/programs.
func TestCatalogueProgramsAreDeclared(t *testing.T) {
	n := 0
	for _, m := range Models() {
		for _, p := range m.Programs {
			spec, ok := Contract(p)
			require.True(t, ok, "%s: program %s has no declaration in runners/programs", m.Name, p.Name)
			require.Equal(t, p.Name, spec.Name)
			require.NotEmpty(t, spec.Functions)
			n++
		}
	}
	require.Positive(t, n)
}
