package jobs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdopt: a runner's file becomes the job's variant by a rename (or, from another
// filesystem, a copy: /dev/shm when it is one), the source is gone either way, a symlink is
// refused and removed without touching its target, and SweepExports empties the replica's
// export directory only.
func TestAdopt(t *testing.T) {
	files, err := NewFiles(t.TempDir())
	require.NoError(t, err)
	srcDirs := []string{filepath.Join(ExportDir(files.Dir, "r1"), "w", "taken")}
	var a, b syscall.Stat_t
	if syscall.Stat(files.Dir, &a) == nil && syscall.Stat("/dev/shm", &b) == nil && a.Dev != b.Dev {
		shm, err := os.MkdirTemp("/dev/shm", "adopt-test-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(shm) })
		srcDirs = append(srcDirs, shm) // the copy path (EXDEV)
	}
	for i, dir := range srcDirs {
		require.NoError(t, os.MkdirAll(dir, 0o750))
		src := filepath.Join(dir, "clip.mp4")
		require.NoError(t, os.WriteFile(src, []byte("the clip"), 0o600))
		id := []string{"video_a", "video_b"}[i]
		name, err := files.Adopt(id, "mp4", src)
		require.NoError(t, err)
		require.Equal(t, id+".mp4", name)
		got, err := os.ReadFile(files.Path(name))
		require.NoError(t, err)
		require.Equal(t, "the clip", string(got))
		require.NoFileExists(t, src)
	}

	target := filepath.Join(t.TempDir(), "target.mp4")
	require.NoError(t, os.WriteFile(target, []byte("not ours"), 0o600))
	link := filepath.Join(srcDirs[0], "link.mp4")
	require.NoError(t, os.Symlink(target, link))
	_, err = files.Adopt("video_c", "mp4", link)
	require.ErrorContains(t, err, "is not a regular file")
	_, err = os.Lstat(link)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.FileExists(t, target)
	require.NoFileExists(t, files.Path(Name("video_c", "mp4")))
	_, err = files.Adopt("video_d", "mp4", filepath.Join(srcDirs[0], "missing.mp4"))
	require.ErrorIs(t, err, os.ErrNotExist)

	other := filepath.Join(ExportDir(files.Dir, "r2"), "w", "out", "x.mp4")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o750))
	require.NoError(t, os.WriteFile(other, []byte("r2's"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(srcDirs[0], "left.mp4"), []byte("x"), 0o600))
	require.NoError(t, files.SweepExports("r1"))
	require.NoDirExists(t, ExportDir(files.Dir, "r1"))
	require.FileExists(t, other)
	require.FileExists(t, files.Path("video_a.mp4"))
}
