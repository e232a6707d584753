package procrunner

// File results: a video runner that encodes its clip itself (HEAD's TTLTX23DistilledRunner
// always; TTWan22T2VProdiaRunner, TTWan22I2VProdiaRunner and TTMiniMaxH3Runner with
// export_in_runner, their default) answers the MP4's path, not frames. The worker sends the
// path (never the bytes); the parent takes the file only from the directory it gave the child
// (Config.ExportDir's "out", the child's TT_VIDEO_OUTPUT_DIR), only a regular file (no symlink,
// device or FIFO), not empty, at most Config.MaxFileBytes, starting with an MP4 "ftyp" box, and
// moves it at once into "taken", beside "out", so a restarted child (whose "out" is emptied)
// cannot touch it; the receiver of the runners.VideoResult adopts it (jobs.Files.Adopt) or
// removes it. A file refused here is removed when it lies in "out", left alone otherwise (it
// is not ours).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// DefaultMaxFileBytes is Config.MaxFileBytes' default: 4 GiB, far above a 1080p clip of a few
// seconds at CRF 23 (tens of MB), far below a full disk.
const DefaultMaxFileBytes = 4 << 30

// takenSeq numbers the files taken, for unique names in "taken".
var takenSeq atomic.Uint64

// exportDirs are the child's directory and the taken files' directory.
func (r *Runner) exportDirs() (out, taken string, err error) {
	base, err := filepath.Abs(r.cfg.ExportDir)
	if err != nil {
		return "", "", fmt.Errorf("export directory %s: %w", r.cfg.ExportDir, err)
	}
	return filepath.Join(base, "out"), filepath.Join(base, "taken"), nil
}

// prepareExport empties the child's export directory (a previous child of this group may have
// died mid-export) and makes both directories; it returns the child's.
func (r *Runner) prepareExport() (string, error) {
	out, taken, err := r.exportDirs()
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(out); err != nil {
		return "", fmt.Errorf("empty the export directory: %w", err)
	}
	for _, d := range []string{out, taken} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return "", fmt.Errorf("export directory: %w", err)
		}
	}
	return out, nil
}

// takeFiles takes a video result's file (see the file comment); other results pass as they
// are. A task that ended meanwhile (nobody will receive the result) has its file removed.
func (r *Runner) takeFiles(t runners.Task, v runners.Result) (runners.Result, error) {
	vr, ok := v.(*runners.VideoResult)
	if !ok || vr.File == "" {
		return v, nil
	}
	taken, err := r.takeFile(vr.File)
	if err != nil {
		return nil, err
	}
	if t.Ctx != nil && t.Ctx.Err() != nil {
		_ = os.Remove(taken)
		return nil, fmt.Errorf("the job ended before its video file arrived: %w", t.Ctx.Err())
	}
	vr.File = taken
	return vr, nil
}

// takeFile checks the child's file at path and moves it into "taken", returning its new path.
func (r *Runner) takeFile(path string) (string, error) {
	if r.cfg.ExportDir == "" {
		return "", fmt.Errorf("%w: the runner answered the file %s, but this worker has no export directory (only video workers may answer files)", ErrProtocol, path)
	}
	out, takenDir, err := r.exportDirs()
	if err != nil {
		return "", err
	}
	clean := filepath.Clean(path)
	if !filepath.IsAbs(clean) || filepath.Dir(clean) != out {
		return "", fmt.Errorf("the runner's video file %s is not in the worker's export directory %s: refused", path, out)
	}
	refuse := func(format string, a ...any) (string, error) {
		_ = os.Remove(clean) // ours: in "out" (a symlink is removed, not its target)
		return "", fmt.Errorf("the runner's video file %s "+format, append([]any{path}, a...)...)
	}
	if st, err := os.Lstat(out); err != nil || !st.IsDir() {
		return refuse("is refused: the export directory %s is not a directory", out)
	}
	st, err := os.Lstat(clean)
	switch {
	case err != nil:
		return "", fmt.Errorf("the runner's video file %s: %w", path, err)
	case !st.Mode().IsRegular():
		return refuse("is not a regular file (%s): refused", st.Mode().Type())
	case st.Size() == 0:
		return refuse("is empty")
	case st.Size() > r.cfg.MaxFileBytes:
		return refuse("has %d bytes, more than the %d a video file may have", st.Size(), r.cfg.MaxFileBytes)
	}
	f, err := os.OpenFile(clean, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return refuse("cannot be opened: %v", err)
	}
	var head [8]byte
	n, _ := f.ReadAt(head[:], 0)
	fst, ferr := f.Stat()
	_ = f.Close()
	if ferr != nil || !os.SameFile(st, fst) {
		return refuse("changed while it was checked")
	}
	if n < 8 || !bytes.Equal(head[4:8], []byte("ftyp")) {
		return refuse("is not an MP4 (it does not start with an ftyp box)")
	}
	taken := filepath.Join(takenDir, strconv.FormatInt(time.Now().UnixNano(), 36)+"-"+
		strconv.FormatUint(takenSeq.Add(1), 10)+".mp4")
	if err := os.Rename(clean, taken); err != nil {
		return refuse("cannot be taken from the worker: %v", err)
	}
	r.log.Debug("video file taken from the worker", "from", clean, "to", taken, "bytes", st.Size())
	return taken, nil
}
