package jobs

// Adopting files a model runner encoded itself (HEAD's self-encoding video runners on the
// Python road), and where their workers may write them.

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
)

// exportRoot is the directory under the result directory that holds the workers' export
// directories: a dot name, so SweepOrphans (which reads only "<id>.…" files) never touches it.
const exportRoot = ".worker-export"

// ExportDir is where the workers of replica owner, under the result directory dir, may leave
// the files their runners encode (one subdirectory per worker, see procrunner.Config.ExportDir).
// It is on the result directory's filesystem, so adopting a file is a rename. Recover empties
// it at start (the replica's previous life may have left files in it).
func ExportDir(dir, owner string) string {
	return filepath.Join(dir, exportRoot, url.PathEscape(owner))
}

// SweepExports removes everything under the replica's export directory (see ExportDir); it
// runs before any worker starts.
func (f *Files) SweepExports(owner string) error {
	if err := os.RemoveAll(ExportDir(f.Dir, owner)); err != nil {
		return fmt.Errorf("worker export directory: %w", err)
	}
	return nil
}

// Adopt makes the regular file src (an MP4 a runner encoded) job id's result variant and
// returns its file name: renamed into place, or, across filesystems, copied to a temporary
// file, synced and renamed. src is gone afterwards whatever happens, and on error nothing of
// the variant is left behind. The caller has checked src (see procrunner's file results).
func (f *Files) Adopt(id, variant, src string) (name string, err error) {
	defer func() {
		if rmErr := os.Remove(src); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove adopted file: %w", rmErr)
		}
	}()
	st, err := os.Lstat(src)
	if err != nil {
		return "", fmt.Errorf("adopt result file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("adopt result file: %s is not a regular file (%s)", src, st.Mode().Type())
	}
	name = Name(id, variant)
	err = os.Rename(src, f.Path(name))
	if err == nil {
		return name, nil
	}
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(le.Err, syscall.EXDEV) {
		return "", fmt.Errorf("adopt result file: %w", err)
	}
	return f.Write(id, variant, func(w io.Writer) error {
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer func() { _ = in.Close() }()
		_, err = io.Copy(w, in)
		return err
	})
}
