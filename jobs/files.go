package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// TempFile is a result file being written.
type TempFile interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
}

// Files keeps jobs' result files in one directory: "<id>.<variant>" (video_….mp4,
// video_….thumbnail.webp). A file appears whole or not at all: it is written to a temporary
// ".<id>.….tmp" beside it, synced and renamed.
type Files struct {
	Dir string
	// CreateTemp makes the temporary file (os.CreateTemp; a seam for tests of a full disk).
	CreateTemp func(dir, pattern string) (TempFile, error)
}

// NewFiles returns the result directory dir, created if missing.
func NewFiles(dir string) (*Files, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("result directory: %w", err)
	}
	return &Files{Dir: dir, CreateTemp: func(dir, pattern string) (TempFile, error) { return os.CreateTemp(dir, pattern) }}, nil
}

// Name is the file name of a job's result variant.
func Name(id, variant string) string { return id + "." + variant }

// Path is the full path of a stored file name.
func (f *Files) Path(name string) string { return filepath.Join(f.Dir, filepath.Base(name)) }

// Write stores a job's result variant from what write produces and returns its file name;
// on any error nothing is left behind.
func (f *Files) Write(id, variant string, write func(io.Writer) error) (name string, err error) {
	tmp, err := f.CreateTemp(f.Dir, "."+id+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("create result file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return "", fmt.Errorf("write result file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("sync result file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("close result file: %w", err)
	}
	name = Name(id, variant)
	if err := os.Rename(tmp.Name(), f.Path(name)); err != nil {
		return "", fmt.Errorf("store result file: %w", err)
	}
	return name, nil
}

// WritePath stores a job's result variant written by write at a temporary path (for writers
// that need a path, such as ffmpeg's MP4 muxer, which seeks) and returns its file name; on any
// error nothing is left behind.
func (f *Files) WritePath(id, variant string, write func(path string) error) (name string, err error) {
	tmp, err := f.CreateTemp(f.Dir, "."+id+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("create result file: %w", err)
	}
	path := tmp.Name()
	if err := tmp.Close(); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("create result file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if err := write(path); err != nil {
		return "", fmt.Errorf("write result file: %w", err)
	}
	if err := syncFile(path); err != nil {
		return "", fmt.Errorf("sync result file: %w", err)
	}
	name = Name(id, variant)
	if err := os.Rename(path, f.Path(name)); err != nil {
		return "", fmt.Errorf("store result file: %w", err)
	}
	return name, nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// idOf is the job id a file in the directory belongs to ("" for foreign files).
func idOf(name string) (id string, temp bool) {
	if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
		id, _, _ = strings.Cut(name[1:], ".")
		return id, true
	}
	id, _, ok := strings.Cut(name, ".")
	if !ok {
		return "", false
	}
	return id, false
}

// Remove deletes every file of a job (its variants and any temporary file).
func (f *Files) Remove(id string) error {
	if id == "" {
		return nil
	}
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		return fmt.Errorf("result directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if owner, _ := idOf(e.Name()); owner == id {
			if err := os.Remove(filepath.Join(f.Dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// SweepOrphans deletes files of jobs the store does not hold, and temporary files of jobs that
// are not running (a write cut short by a crash); files whose names are not a job's
// ("<id>.…" with the given id prefix) are left alone. It returns how many it removed.
func (f *Files) SweepOrphans(ctx context.Context, s Store, prefix string) (int, error) {
	known, err := s.IDs(ctx)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		return 0, fmt.Errorf("result directory: %w", err)
	}
	n := 0
	for _, e := range entries {
		id, temp := idOf(e.Name())
		if id == "" || !strings.HasPrefix(id, prefix) || e.IsDir() {
			continue
		}
		st, ok := known[id]
		if ok && (!temp || st == InProgress) {
			continue
		}
		if err := os.Remove(filepath.Join(f.Dir, e.Name())); err == nil {
			n++
		}
	}
	return n, nil
}
