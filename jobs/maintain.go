package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Maintainer keeps a replica's jobs honest: at start it fails what the replica's previous life
// left unfinished and removes orphaned files; then, every Interval, it beats the heart of its
// own unfinished jobs, fails jobs stuck for Stuck, and deletes jobs (and their files) that
// finished more than Retention ago.
type Maintainer struct {
	Store     Store
	Files     *Files
	Owner     string
	Prefix    string // the id prefix of the jobs whose files it manages
	Retention time.Duration
	Stuck     time.Duration
	Interval  time.Duration
	Log       *slog.Logger
}

// Recover runs the start-up steps: Interrupt the owner's unfinished jobs, then SweepOrphans
// and SweepExports (before any worker starts).
func (m *Maintainer) Recover(ctx context.Context) error {
	n, err := m.Store.Interrupt(ctx, m.Owner)
	if err != nil {
		return fmt.Errorf("fail interrupted jobs: %w", err)
	}
	if err := m.Files.SweepExports(m.Owner); err != nil {
		return err
	}
	removed, err := m.Files.SweepOrphans(ctx, m.Store, m.Prefix)
	if err != nil {
		return fmt.Errorf("orphan sweep: %w", err)
	}
	if m.Log != nil && (n > 0 || removed > 0) {
		m.Log.Info("jobs recovered at start-up", "interrupted", n, "orphan_files_removed", removed)
	}
	return nil
}

// Sweep runs one round of the periodic steps at now.
func (m *Maintainer) Sweep(ctx context.Context, now time.Time) error {
	if err := m.Store.Touch(ctx, m.Owner); err != nil {
		return err
	}
	if m.Retention > 0 { // before the stuck sweep, which starts its jobs' retention
		expired, err := m.Store.Expire(ctx, now.Add(-m.Retention))
		if err != nil {
			return err
		}
		for _, j := range expired {
			if err := m.Files.Remove(j.ID); err != nil && m.Log != nil {
				m.Log.Warn("expired job's files not removed", "job", j.ID, "err", err)
			}
		}
	}
	if m.Stuck > 0 {
		if _, err := m.Store.FailStuck(ctx, now.Add(-m.Stuck)); err != nil {
			return err
		}
	}
	return nil
}

// Run sweeps every Interval until ctx ends.
func (m *Maintainer) Run(ctx context.Context) {
	t := time.NewTicker(m.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := m.Sweep(ctx, now); err != nil && m.Log != nil && ctx.Err() == nil {
				m.Log.Warn("job sweep failed", "err", err)
			}
		}
	}
}
