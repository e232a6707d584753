package python

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

func TestInstall(t *testing.T) {
	base := t.TempDir()
	script, err := Install(base)
	require.NoError(t, err)
	src, err := os.ReadFile("tt_worker.py")
	require.NoError(t, err)
	got, err := os.ReadFile(script)
	require.NoError(t, err)
	require.Equal(t, src, got)
	for _, m := range []string{"hooks", "protocol", "image", "audio", "cnn", "tts", "video"} {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "tt_worker_"+m+".py"))
		require.NoError(t, err, "the %s module sits beside the script", m)
	}
	again, err := Install(base)
	require.NoError(t, err)
	require.Equal(t, script, again, "an install is reused")
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary directories left behind")
}

// TestLanguageNames: the worker answers the language names the Go runners answer.
func TestLanguageNames(t *testing.T) {
	src, err := os.ReadFile("tt_worker_audio.py")
	require.NoError(t, err)
	pairs := regexp.MustCompile(`"([a-z]{2,3})": "([a-z ]+)"`).FindAllStringSubmatch(string(src), -1)
	require.Len(t, pairs, 100)
	for _, p := range pairs {
		name, ok := whispertokenizer.LanguageName(p[1])
		require.True(t, ok, p[1])
		require.Equal(t, name, p[2], p[1])
	}
}
