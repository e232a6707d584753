package procrunner

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// mp4Head is the start of an MP4: an ftyp box.
var mp4Head = []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")

// TestTakeFile: a file result is taken only from the worker's export directory, only as a
// regular, non-empty, capped file that starts with an ftyp box; it is moved out of the
// worker's reach; a refused file in the export directory is removed, one outside is left
// alone; a worker without an export directory may answer no file at all.
func TestTakeFile(t *testing.T) {
	outsideDir := t.TempDir()
	outside := filepath.Join(outsideDir, "clip.mp4")
	require.NoError(t, os.WriteFile(outside, mp4Head, 0o600))

	for _, c := range []struct {
		name string
		make func(t *testing.T, out string) string // the path the worker answers
		err  string                                // "" taken
		kept bool                                  // a refused path is still there
	}{
		{"an MP4 in the export directory", func(t *testing.T, out string) string {
			p := filepath.Join(out, "a.mp4")
			require.NoError(t, os.WriteFile(p, mp4Head, 0o600))
			return p
		}, "", false},
		{"a path outside", func(*testing.T, string) string { return outside }, "is not in the worker's export directory", true},
		{"a relative path", func(*testing.T, string) string { return "a.mp4" }, "is not in the worker's export directory", false},
		{"a dot-dot escape", func(t *testing.T, out string) string {
			rel, err := filepath.Rel(out, outside)
			require.NoError(t, err)
			return out + "/" + rel
		}, "is not in the worker's export directory", true},
		{"a subdirectory", func(t *testing.T, out string) string {
			require.NoError(t, os.Mkdir(filepath.Join(out, "sub"), 0o750))
			p := filepath.Join(out, "sub", "a.mp4")
			require.NoError(t, os.WriteFile(p, mp4Head, 0o600))
			return p
		}, "is not in the worker's export directory", true},
		{"a symlink to a file outside", func(t *testing.T, out string) string {
			p := filepath.Join(out, "link.mp4")
			require.NoError(t, os.Symlink(outside, p))
			return p
		}, "is not a regular file", false},
		{"a FIFO", func(t *testing.T, out string) string {
			p := filepath.Join(out, "fifo.mp4")
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			return p
		}, "is not a regular file", false},
		{"a directory", func(t *testing.T, out string) string {
			p := filepath.Join(out, "dir.mp4")
			require.NoError(t, os.Mkdir(p, 0o750))
			return p
		}, "is not a regular file", false},
		{"a missing file", func(_ *testing.T, out string) string { return filepath.Join(out, "gone.mp4") }, "no such file", false},
		{"an empty file", func(t *testing.T, out string) string {
			p := filepath.Join(out, "empty.mp4")
			require.NoError(t, os.WriteFile(p, nil, 0o600))
			return p
		}, "is empty", false},
		{"a file over the cap", func(t *testing.T, out string) string {
			p := filepath.Join(out, "big.mp4")
			require.NoError(t, os.WriteFile(p, append(mp4Head, make([]byte, 100)...), 0o600))
			return p
		}, "more than the 64 a video file may have", false},
		{"not an MP4", func(t *testing.T, out string) string {
			p := filepath.Join(out, "junk.mp4")
			require.NoError(t, os.WriteFile(p, []byte("not a video at all"), 0o600))
			return p
		}, "is not an MP4", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(Config{WorkerID: "0", ExportDir: t.TempDir(), MaxFileBytes: 64})
			out, err := r.prepareExport()
			require.NoError(t, err)
			path := c.make(t, out)
			got, err := r.takeFiles(runners.Task{Ctx: context.Background()}, &runners.VideoResult{FPS: 16, File: path})
			_, statErr := os.Lstat(path)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				require.Equal(t, c.kept, statErr == nil, "the refused path is still there")
				require.FileExists(t, outside, "a file outside is never touched")
				return
			}
			require.NoError(t, err)
			taken := got.(*runners.VideoResult).File
			require.Equal(t, filepath.Join(filepath.Dir(out), "taken"), filepath.Dir(taken))
			require.ErrorIs(t, statErr, os.ErrNotExist, "moved out of the worker's directory")
			b, err := os.ReadFile(taken)
			require.NoError(t, err)
			require.Equal(t, mp4Head, b)
		})
	}

	t.Run("a job that ended meanwhile", func(t *testing.T) {
		r := New(Config{WorkerID: "0", ExportDir: t.TempDir()})
		out, err := r.prepareExport()
		require.NoError(t, err)
		p := filepath.Join(out, "a.mp4")
		require.NoError(t, os.WriteFile(p, mp4Head, 0o600))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = r.takeFiles(runners.Task{Ctx: ctx}, &runners.VideoResult{FPS: 16, File: p})
		require.ErrorIs(t, err, context.Canceled)
		left, err := filepath.Glob(filepath.Join(filepath.Dir(out), "*", "*"))
		require.NoError(t, err)
		require.Empty(t, left)
	})
	t.Run("no export directory", func(t *testing.T) {
		_, err := New(Config{WorkerID: "0"}).takeFiles(runners.Task{}, &runners.VideoResult{FPS: 16, File: outside})
		require.ErrorIs(t, err, ErrProtocol)
		require.FileExists(t, outside)
	})
	t.Run("a restart empties the worker's directory", func(t *testing.T) {
		r := New(Config{WorkerID: "0", ExportDir: t.TempDir()})
		out, err := r.prepareExport()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, "half_silent.mp4"), mp4Head, 0o600))
		_, err = r.prepareExport()
		require.NoError(t, err)
		left, err := os.ReadDir(out)
		require.NoError(t, err)
		require.Empty(t, left)
	})
}
