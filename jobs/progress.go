package jobs

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped: the store refused a running job's start or progress because the job is no
// longer queued or running (cancelled or deleted, possibly by another replica), or the job's
// progress was already flushed.
var ErrStopped = errors.New("job stopped")

// ProgressStore is what a Progress writer needs of the store.
type ProgressStore interface {
	Start(ctx context.Context, id string) (bool, error)
	SetProgress(ctx context.Context, id string, percent int) (bool, error)
}

// Progress takes one running job's start and progress writes off the caller's goroutine (the
// device's): Set only records the newest percent and, when no write is in flight, starts a
// background writer. The writer moves the job to in_progress first (Store.Start), then writes
// the newest percent until the written one is the newest, so at most one write of the job is
// in flight and values superseded meanwhile are never written. A write the store refuses (the
// job was cancelled or deleted elsewhere) or fails is remembered in memory and answered by the
// next Set without waiting on the store. Flush waits for the writes to land: the caller writes
// the job's final state after it, so no late progress follows that state.
type Progress struct {
	store ProgressStore
	ctx   context.Context
	id    string

	mu               sync.Mutex
	pending, written int
	started          bool          // Store.Start succeeded
	closed           bool          // Flush was called: no further writes
	err              error         // ErrStopped or the store's error: no further writes
	idle             chan struct{} // non-nil while a writer runs; closed when it ends
	landed           func()        // tests: told (under mu) after each write's answer is recorded
}

// NewProgress returns job id's progress writer over store; its writes use ctx's values
// without its cancellation (a cancelled job's last writes still land or are refused).
func NewProgress(ctx context.Context, store ProgressStore, id string) *Progress {
	return &Progress{store: store, ctx: context.WithoutCancel(ctx), id: id}
}

// Set records the job's newest progress (percent; 0 only starts the job) and returns at once:
// ErrStopped when an earlier write found the job stopped (or after Flush), the store's error
// when a write failed, nil otherwise. The first Set also moves the job to in_progress.
func (p *Progress) Set(percent int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrStopped
	}
	if p.err != nil {
		return p.err
	}
	p.pending = percent
	if p.idle == nil {
		p.idle = make(chan struct{})
		go p.write()
	}
	return nil
}

// write is the background writer: Start once, then the newest percent until it is written.
func (p *Progress) write() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.err == nil && (!p.started || p.pending != p.written) {
		v, started := p.pending, p.started
		p.mu.Unlock()
		var ok bool
		var err error
		if started {
			ok, err = p.store.SetProgress(p.ctx, p.id, v)
		} else {
			ok, err = p.store.Start(p.ctx, p.id)
		}
		p.mu.Lock()
		switch {
		case err != nil:
			p.err = err
		case !ok:
			p.err = ErrStopped
		case started:
			p.written = v
		default:
			p.started = true
		}
		if p.landed != nil {
			p.landed()
		}
	}
	close(p.idle)
	p.idle = nil
}

// Flush waits until the job's writes have landed, refuses any later Set, and tells whether the
// job was moved to in_progress and the write error that stopped the writes (ErrStopped when
// the store refused one), if any.
func (p *Progress) Flush() (started bool, err error) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.mu.Unlock()
	if idle != nil {
		<-idle
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started, p.err
}
