package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository root: the parent of this module's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Dir(wd)
	_, err = os.Stat(filepath.Join(root, "cmd", "tt-media-server"))
	require.NoError(t, err, "deploy/ must sit in the tt-media-server-go repository")
	return root
}

func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	require.NoError(t, err)
	return b
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "tt-media-deploy-") }

func TestMain(m *testing.M) {
	code := m.Run()
	if serverBin != "" {
		_ = os.RemoveAll(filepath.Dir(serverBin))
	}
	os.Exit(code)
}
