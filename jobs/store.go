package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	// The database/sql drivers: pgx for postgres:// URLs, modernc's pure-Go SQLite otherwise.
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// Store is what the job runner and the HTTP handlers need of the job database; *DB implements
// it over SQLite and PostgreSQL alike.
type Store interface {
	Create(ctx context.Context, j *Job, maxJobs int) error
	Get(ctx context.Context, id string) (Job, error)
	List(ctx context.Context, q ListQuery) (jobs []Job, more bool, err error)
	Start(ctx context.Context, id string) (bool, error)
	SetProgress(ctx context.Context, id string, percent int) (bool, error)
	Complete(ctx context.Context, id, resultPath string) (bool, error)
	Fail(ctx context.Context, id, code, msg string) (bool, error)
	Cancel(ctx context.Context, id string) (Job, error)
	Delete(ctx context.Context, id string) (Job, error)
	Touch(ctx context.Context, owner string) error
	Interrupt(ctx context.Context, owner string) (int, error)
	FailStuck(ctx context.Context, before time.Time) (int, error)
	Expire(ctx context.Context, before time.Time) ([]Job, error)
	IDs(ctx context.Context) (map[string]State, error)
	Ping(ctx context.Context) error
	Close() error
}

// ListQuery selects a page of jobs: of Kind (all kinds when ""), at most Limit (0: all), in
// creation order (Desc: newest first), after the job with id After ("" = from the start).
type ListQuery struct {
	Kind  string
	Limit int
	After string
	Desc  bool
}

// DB is a Store in SQLite or PostgreSQL.
type DB struct {
	db       *sql.DB
	postgres bool
}

var _ Store = (*DB)(nil)

const schema = `CREATE TABLE IF NOT EXISTS jobs (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	model TEXT NOT NULL,
	owner TEXT NOT NULL,
	client TEXT NOT NULL,
	status TEXT NOT NULL,
	progress INTEGER NOT NULL DEFAULT 0,
	params TEXT NOT NULL,
	result_path TEXT NOT NULL DEFAULT '',
	error_code TEXT NOT NULL DEFAULT '',
	error_msg TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	started_at BIGINT NOT NULL DEFAULT 0,
	completed_at BIGINT NOT NULL DEFAULT 0,
	updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_creation ON jobs (created_at, id);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, updated_at)`

// IsPostgres reports whether a JOB_DATABASE_URL names a PostgreSQL server.
func IsPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// Open opens (and creates) the job database: a postgres:// or postgresql:// URL is a
// PostgreSQL server (pgx), anything else the path of an SQLite file.
func Open(ctx context.Context, url string) (*DB, error) {
	d := &DB{postgres: IsPostgres(url)}
	var err error
	if d.postgres {
		d.db, err = sql.Open("pgx", url)
		if err == nil {
			d.db.SetMaxOpenConns(8)
		}
	} else {
		// One connection: SQLite has one writer; WAL keeps readers of other processes going,
		// busy_timeout waits out another process's write instead of failing.
		dsn := "file:" + url + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
		d.db, err = sql.Open("sqlite", dsn)
		if err == nil {
			d.db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open job database: %w", err)
	}
	for _, stmt := range strings.Split(schema, ";\n") {
		if _, err := d.db.ExecContext(ctx, stmt); err != nil {
			_ = d.db.Close()
			return nil, fmt.Errorf("%w: create job table: %w", ErrUnavailable, err)
		}
	}
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// q rewrites ? placeholders as PostgreSQL's $n.
func (d *DB) q(query string) string {
	if !d.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func wrap(err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

const columns = `id, kind, model, owner, client, status, progress, params, result_path, error_code, error_msg,
	created_at, started_at, completed_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanJob(s scanner) (Job, error) {
	var j Job
	var status, params string
	var created, started, completed, updated int64
	err := s.Scan(&j.ID, &j.Kind, &j.Model, &j.Owner, &j.Client, &status, &j.Progress, &params, &j.ResultPath,
		&j.ErrorCode, &j.ErrorMsg, &created, &started, &completed, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, wrap(err)
	}
	j.Status, j.Params = State(status), []byte(params)
	j.CreatedAt, j.StartedAt, j.CompletedAt, j.UpdatedAt = fromMS(created), fromMS(started), fromMS(completed), fromMS(updated)
	return j, nil
}

// Create stores a new queued job, or fails with ErrTooMany when maxJobs (> 0) jobs are stored.
func (d *DB) Create(ctx context.Context, j *Job, maxJobs int) error {
	now := time.Now()
	j.Status, j.CreatedAt, j.UpdatedAt = Queued, now, now
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap(err)
	}
	defer func() { _ = tx.Rollback() }()
	if d.postgres { // count and insert as one step across replicas
		if _, err := tx.ExecContext(ctx, "LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return wrap(err)
		}
	}
	if maxJobs > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM jobs").Scan(&n); err != nil {
			return wrap(err)
		}
		if n >= maxJobs {
			return fmt.Errorf("%w (%d of MAX_JOBS=%d)", ErrTooMany, n, maxJobs)
		}
	}
	_, err = tx.ExecContext(ctx, d.q(`INSERT INTO jobs (`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		j.ID, j.Kind, j.Model, j.Owner, j.Client, string(j.Status), 0, string(j.Params), "", "", "",
		ms(now), 0, 0, ms(now))
	if err != nil {
		return wrap(err)
	}
	return wrap(tx.Commit())
}

// Get returns the job with id, or ErrNotFound.
func (d *DB) Get(ctx context.Context, id string) (Job, error) {
	return scanJob(d.db.QueryRowContext(ctx, d.q(`SELECT `+columns+` FROM jobs WHERE id = ?`), id))
}

// List returns a page of jobs and whether more follow; an After id that does not exist is
// ErrNotFound.
func (d *DB) List(ctx context.Context, q ListQuery) ([]Job, bool, error) {
	query := `SELECT ` + columns + ` FROM jobs WHERE (? = '' OR kind = ?)`
	args := []any{q.Kind, q.Kind}
	cmp, order := ">", "ASC"
	if q.Desc {
		cmp, order = "<", "DESC"
	}
	if q.After != "" {
		after, err := d.Get(ctx, q.After)
		if err != nil {
			return nil, false, err
		}
		query += ` AND (created_at ` + cmp + ` ? OR (created_at = ? AND id ` + cmp + ` ?))`
		args = append(args, ms(after.CreatedAt), ms(after.CreatedAt), after.ID)
	}
	query += ` ORDER BY created_at ` + order + `, id ` + order
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit+1)
	}
	rows, err := d.db.QueryContext(ctx, d.q(query), args...)
	if err != nil {
		return nil, false, wrap(err)
	}
	defer func() { _ = rows.Close() }()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, false, wrap(err)
	}
	more := q.Limit > 0 && len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

func (d *DB) exec(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := d.db.ExecContext(ctx, d.q(query), args...)
	if err != nil {
		return false, wrap(err)
	}
	n, err := res.RowsAffected()
	return n > 0, wrap(err)
}

// Start moves a queued job to in_progress; false when it is no longer queued (cancelled,
// deleted, swept).
func (d *DB) Start(ctx context.Context, id string) (bool, error) {
	now := ms(time.Now())
	return d.exec(ctx, `UPDATE jobs SET status = ?, started_at = ?, updated_at = ? WHERE id = ? AND status = ?`,
		string(InProgress), now, now, id, string(Queued))
}

// SetProgress records an in_progress job's progress; false when the job is no longer running
// (cancelled or deleted elsewhere): the caller stops its work.
func (d *DB) SetProgress(ctx context.Context, id string, percent int) (bool, error) {
	percent = min(max(percent, 0), 100)
	return d.exec(ctx, `UPDATE jobs SET progress = ?, updated_at = ? WHERE id = ? AND status = ?`,
		percent, ms(time.Now()), id, string(InProgress))
}

// Complete marks an in_progress job completed with its result file; false when it was
// cancelled or deleted meanwhile (the caller removes the file).
func (d *DB) Complete(ctx context.Context, id, resultPath string) (bool, error) {
	now := ms(time.Now())
	return d.exec(ctx, `UPDATE jobs SET status = ?, progress = 100, result_path = ?, completed_at = ?, updated_at = ?
		WHERE id = ? AND status = ?`, string(Completed), resultPath, now, now, id, string(InProgress))
}

// Fail marks an unfinished job failed; false when it had finished already.
func (d *DB) Fail(ctx context.Context, id, code, msg string) (bool, error) {
	now := ms(time.Now())
	return d.exec(ctx, `UPDATE jobs SET status = ?, error_code = ?, error_msg = ?, completed_at = ?, updated_at = ?
		WHERE id = ? AND status IN (?, ?)`, string(Failed), code, msg, now, now, id, string(Queued), string(InProgress))
}

// Cancel marks an unfinished job cancelled and returns it; ErrTerminal (with the job) when it
// had finished, ErrNotFound when there is none.
func (d *DB) Cancel(ctx context.Context, id string) (Job, error) {
	now := ms(time.Now())
	ok, err := d.exec(ctx, `UPDATE jobs SET status = ?, completed_at = ?, updated_at = ? WHERE id = ? AND status IN (?, ?)`,
		string(Cancelled), now, now, id, string(Queued), string(InProgress))
	if err != nil {
		return Job{}, err
	}
	j, err := d.Get(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if !ok {
		return j, fmt.Errorf("%w: %s is %s", ErrTerminal, id, j.Status)
	}
	return j, nil
}

// Delete removes a job and returns it as it was (the caller removes its files).
func (d *DB) Delete(ctx context.Context, id string) (Job, error) {
	j, err := scanJob(d.db.QueryRowContext(ctx, d.q(`DELETE FROM jobs WHERE id = ? RETURNING `+columns), id))
	return j, err
}

// Touch is the heartbeat of a replica's unfinished jobs: the stuck sweep leaves jobs alone
// whose owner is alive.
func (d *DB) Touch(ctx context.Context, owner string) error {
	_, err := d.exec(ctx, `UPDATE jobs SET updated_at = ? WHERE owner = ? AND status IN (?, ?)`,
		ms(time.Now()), owner, string(Queued), string(InProgress))
	return err
}

// Interrupt fails every unfinished job of owner with CodeInterrupted: what a replica does at
// start-up with the jobs its previous life left behind.
func (d *DB) Interrupt(ctx context.Context, owner string) (int, error) {
	now := ms(time.Now())
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE jobs SET status = ?, error_code = ?, error_msg = ?, completed_at = ?, updated_at = ?
		WHERE owner = ? AND status IN (?, ?)`), string(Failed), CodeInterrupted,
		"the server restarted before the job finished; submit it again", now, now, owner, string(Queued), string(InProgress))
	if err != nil {
		return 0, wrap(err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err)
}

// FailStuck fails unfinished jobs not updated since before (their replica is gone or hung).
func (d *DB) FailStuck(ctx context.Context, before time.Time) (int, error) {
	now := ms(time.Now())
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE jobs SET status = ?, error_code = ?, error_msg = ?, completed_at = ?, updated_at = ?
		WHERE status IN (?, ?) AND updated_at < ?`), string(Failed), CodeStuck,
		"the job made no progress for JOB_MAX_STUCK_TIME_SECONDS", now, now, string(Queued), string(InProgress), ms(before))
	if err != nil {
		return 0, wrap(err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap(err)
}

// Expire deletes the jobs that finished before before and returns them (the caller removes
// their files).
func (d *DB) Expire(ctx context.Context, before time.Time) ([]Job, error) {
	rows, err := d.db.QueryContext(ctx, d.q(`DELETE FROM jobs WHERE status IN (?, ?, ?) AND completed_at < ? RETURNING `+columns),
		string(Completed), string(Failed), string(Cancelled), ms(before))
	if err != nil {
		return nil, wrap(err)
	}
	defer func() { _ = rows.Close() }()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, wrap(rows.Err())
}

// IDs returns every stored job's id and state (the orphan sweep's list).
func (d *DB) IDs(ctx context.Context) (map[string]State, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, status FROM jobs`)
	if err != nil {
		return nil, wrap(err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]State{}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, wrap(err)
		}
		out[id] = State(st)
	}
	return out, wrap(rows.Err())
}
