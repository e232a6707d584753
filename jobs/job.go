// Package jobs is the durable store of asynchronous jobs (video generation): every job, its
// state, progress, result file and error live in a database — embedded SQLite by default (pure
// Go), PostgreSQL when several replicas serve one deployment — so jobs and their results survive
// a restart and any replica can answer for any job. It knows jobs and their states, not models,
// HTTP or devices.
//
// Lifecycle: queued → in_progress (when a device takes it) → completed | failed | cancelled.
// A restart fails the jobs the restarted replica had not finished (code "interrupted"): their
// device work is gone and the request's images are not kept, so they are not re-queued.
package jobs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"
)

// State is a job's place in its lifecycle.
type State string

// The job states (HEAD's JobStatus without its transient "cancelling": a cancel here is
// terminal at once, and the device stops at its next step).
const (
	Queued     State = "queued"
	InProgress State = "in_progress"
	Completed  State = "completed"
	Failed     State = "failed"
	Cancelled  State = "cancelled"
)

// Terminal reports whether no further transition leaves s.
func (s State) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Error codes the store and the job runner set on failed jobs.
const (
	// CodeInterrupted: the replica running or queueing the job stopped before it finished.
	CodeInterrupted = "interrupted"
	// CodeStuck: the job made no progress for JOB_MAX_STUCK_TIME_SECONDS.
	CodeStuck = "stuck"
	// CodeProcessing: the device or the encoder failed.
	CodeProcessing = "processing_error"
	// CodeStorage: the result could not be written (disk full, permissions).
	CodeStorage = "storage_error"
)

// Sentinels callers map to HTTP statuses.
var (
	ErrNotFound = errors.New("job not found")
	// ErrTooMany: MAX_JOBS jobs are stored already (429).
	ErrTooMany = errors.New("maximum job count reached")
	// ErrTerminal: the job has already finished (a cancel of a completed job).
	ErrTerminal = errors.New("job already finished")
	// ErrUnavailable: the database does not answer.
	ErrUnavailable = errors.New("job database unavailable")
)

// Job is one stored job. Params is the job's public request parameters as JSON (never image
// payloads); Input is the private request the job runner needs to run it.
type Job struct {
	ID       string
	Kind     string
	Model    string
	Owner    string // the replica that queued it and runs it
	Client   string // who submitted it
	Status   State
	Progress int // 0-100
	Params   []byte
	// ResultPath is the result file's name in the store's directory ("" until completed).
	ResultPath  string
	ErrorCode   string
	ErrorMsg    string
	CreatedAt   time.Time
	StartedAt   time.Time
	CompletedAt time.Time
	UpdatedAt   time.Time
}

// NewID returns a fresh job id: a prefix and 24 random hex digits ("video_3f…").
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
