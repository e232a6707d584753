package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/pgtest"
)

// backends opens a fresh store of each kind: SQLite in a temporary file, and PostgreSQL on a
// server the test starts.
func backends(t *testing.T) map[string]func(t *testing.T) *DB {
	return map[string]func(t *testing.T) *DB{
		"sqlite": func(t *testing.T) *DB {
			db, err := Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"postgres": func(t *testing.T) *DB {
			db, err := Open(context.Background(), pgtest.Database(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

func newJob(id, owner string) *Job {
	return &Job{ID: id, Kind: "video", Model: "tt-wan2.2", Owner: owner, Client: "c", Params: []byte(`{"prompt":"x"}`)}
}

func TestStoreLifecycle(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			require.NoError(t, db.Create(ctx, newJob("video_a", "r1"), 0))
			j, err := db.Get(ctx, "video_a")
			require.NoError(t, err)
			require.Equal(t, Queued, j.Status)
			require.JSONEq(t, `{"prompt":"x"}`, string(j.Params))

			ok, err := db.SetProgress(ctx, "video_a", 10)
			require.NoError(t, err)
			require.False(t, ok, "a queued job has no progress")
			ok, err = db.Start(ctx, "video_a")
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = db.Start(ctx, "video_a")
			require.NoError(t, err)
			require.False(t, ok, "started twice")
			ok, err = db.SetProgress(ctx, "video_a", 250)
			require.NoError(t, err)
			require.True(t, ok)
			j, _ = db.Get(ctx, "video_a")
			require.Equal(t, 100, j.Progress, "progress is clamped to 100")
			ok, err = db.Complete(ctx, "video_a", "video_a.mp4")
			require.NoError(t, err)
			require.True(t, ok)
			j, _ = db.Get(ctx, "video_a")
			require.Equal(t, Completed, j.Status)
			require.Equal(t, "video_a.mp4", j.ResultPath)
			require.False(t, j.CompletedAt.IsZero())

			_, err = db.Cancel(ctx, "video_a")
			require.ErrorIs(t, err, ErrTerminal)
			ok, err = db.Fail(ctx, "video_a", CodeProcessing, "late")
			require.NoError(t, err)
			require.False(t, ok, "a completed job does not fail")

			require.NoError(t, db.Create(ctx, newJob("video_b", "r1"), 0))
			c, err := db.Cancel(ctx, "video_b")
			require.NoError(t, err)
			require.Equal(t, Cancelled, c.Status)
			ok, err = db.Start(ctx, "video_b")
			require.NoError(t, err)
			require.False(t, ok, "a cancelled job never starts")

			_, err = db.Get(ctx, "video_nope")
			require.ErrorIs(t, err, ErrNotFound)
			_, err = db.Cancel(ctx, "video_nope")
			require.ErrorIs(t, err, ErrNotFound)
			d, err := db.Delete(ctx, "video_a")
			require.NoError(t, err)
			require.Equal(t, "video_a.mp4", d.ResultPath)
			_, err = db.Delete(ctx, "video_a")
			require.ErrorIs(t, err, ErrNotFound)
		})
	}
}

func TestStoreMaxJobsAndList(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			for i := range 5 {
				require.NoError(t, db.Create(ctx, newJob(fmt.Sprintf("video_%d", i), "r1"), 5))
			}
			err := db.Create(ctx, newJob("video_5", "r1"), 5)
			require.ErrorIs(t, err, ErrTooMany)

			page, more, err := db.List(ctx, ListQuery{Kind: "video", Limit: 2})
			require.NoError(t, err)
			require.True(t, more)
			require.Equal(t, []string{"video_0", "video_1"}, ids(page))
			page, more, err = db.List(ctx, ListQuery{Kind: "video", Limit: 2, After: "video_3"})
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, []string{"video_4"}, ids(page))
			page, _, err = db.List(ctx, ListQuery{Desc: true, Limit: 2, After: "video_3"})
			require.NoError(t, err)
			require.Equal(t, []string{"video_2", "video_1"}, ids(page))
			page, _, err = db.List(ctx, ListQuery{Kind: "speech"})
			require.NoError(t, err)
			require.Empty(t, page)
			_, _, err = db.List(ctx, ListQuery{After: "video_x"})
			require.ErrorIs(t, err, ErrNotFound)
		})
	}
}

// TestStoreMaxJobsConcurrent: many creates at once never store more than MAX_JOBS.
func TestStoreMaxJobsConcurrent(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for i := range 20 {
				wg.Go(func() { errs <- db.Create(ctx, newJob(fmt.Sprintf("video_%d", i), "r1"), 7) })
			}
			wg.Wait()
			close(errs)
			ok := 0
			for err := range errs {
				if err == nil {
					ok++
				} else {
					require.ErrorIs(t, err, ErrTooMany)
				}
			}
			require.Equal(t, 7, ok)
		})
	}
}

func ids(js []Job) []string {
	out := []string{}
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// TestRecoverAndSweep: a restart fails its own unfinished jobs (not another replica's) and
// removes orphaned files and its workers' export directory; the sweep fails stuck jobs and deletes expired ones with their files.
func TestRecoverAndSweep(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			files, err := NewFiles(t.TempDir())
			require.NoError(t, err)
			for _, id := range []string{"video_q", "video_r", "video_done", "video_other"} {
				owner := "r1"
				if id == "video_other" {
					owner = "r2"
				}
				require.NoError(t, db.Create(ctx, newJob(id, owner), 0))
			}
			for _, id := range []string{"video_r", "video_done", "video_other"} {
				_, err := db.Start(ctx, id)
				require.NoError(t, err)
			}
			name, err := files.Write("video_done", "mp4", func(w io.Writer) error { _, err := w.Write([]byte("mp4")); return err })
			require.NoError(t, err)
			ok, err := db.Complete(ctx, "video_done", name)
			require.NoError(t, err)
			require.True(t, ok)
			// Left behind by a crash: a half-written temp file of the running job, a file of a
			// job the store no longer has, and someone else's file.
			for _, n := range []string{".video_r.123.tmp", "video_gone.mp4", "video_gone.thumbnail.webp", "README"} {
				require.NoError(t, os.WriteFile(filepath.Join(files.Dir, n), []byte("x"), 0o600))
			}
			// MP4s that r1's self-encoding Python workers left (taken or not), and r2's.
			for _, p := range []string{ExportDir(files.Dir, "r1") + "/w@0/out/a.mp4", ExportDir(files.Dir, "r1") + "/w@0/taken/b.mp4",
				ExportDir(files.Dir, "r2") + "/w@0/out/c.mp4"} {
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
				require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
			}
			m := &Maintainer{Store: db, Files: files, Owner: "r1", Prefix: "video_", Retention: time.Hour, Stuck: time.Minute}
			require.NoError(t, m.Recover(ctx))
			for id, want := range map[string]State{"video_q": Failed, "video_r": Failed, "video_done": Completed, "video_other": InProgress} {
				j, err := db.Get(ctx, id)
				require.NoError(t, err)
				require.Equal(t, want, j.Status, id)
				if want == Failed {
					require.Equal(t, CodeInterrupted, j.ErrorCode)
				}
			}
			left, err := os.ReadDir(files.Dir)
			require.NoError(t, err)
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			require.ElementsMatch(t, []string{"video_done.mp4", "README", ".worker-export"}, names)
			require.NoDirExists(t, ExportDir(files.Dir, "r1"))
			require.FileExists(t, ExportDir(files.Dir, "r2")+"/w@0/out/c.mp4")

			// An hour and a minute later: r2's job is stuck, everything finished has expired.
			require.NoError(t, m.Sweep(ctx, time.Now().Add(time.Hour+time.Minute)))
			_, err = db.Get(ctx, "video_done")
			require.ErrorIs(t, err, ErrNotFound)
			_, err = os.Stat(filepath.Join(files.Dir, "video_done.mp4"))
			require.ErrorIs(t, err, os.ErrNotExist)
			j, err := db.Get(ctx, "video_other")
			require.NoError(t, err)
			require.Equal(t, Failed, j.Status)
			require.Equal(t, CodeStuck, j.ErrorCode)
		})
	}
}

// fullDisk fails every write after limit bytes with ENOSPC, like a full file system.
type fullDisk struct {
	*os.File
	limit int
}

func (f *fullDisk) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.File.Write(p[:f.limit])
		f.limit = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.limit -= len(p)
	return f.File.Write(p)
}

func TestFilesWriteIsAllOrNothing(t *testing.T) {
	files, err := NewFiles(t.TempDir())
	require.NoError(t, err)
	files.CreateTemp = func(dir, pattern string) (TempFile, error) {
		f, err := os.CreateTemp(dir, pattern)
		return &fullDisk{File: f, limit: 10}, err
	}
	_, err = files.Write("video_x", "mp4", func(w io.Writer) error {
		_, err := w.Write(make([]byte, 100))
		return err
	})
	require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	left, err := os.ReadDir(files.Dir)
	require.NoError(t, err)
	require.Empty(t, left, "nothing half-written is left")
}
