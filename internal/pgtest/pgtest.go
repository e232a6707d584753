// Package pgtest starts throw-away PostgreSQL servers for tests: Debian's postgresql binaries
// (initdb, pg_ctl; scripts/install-postgresql.sh installs them), a data directory of their own,
// a loopback port, trust authentication. As root the server runs as the postgres user (or
// nobody), since initdb refuses root. Without the binaries a test is skipped, except under
// CI=true, where it fails.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver, to create databases
)

// Server is a running PostgreSQL server.
type Server struct {
	// URL is the server's postgres database.
	URL  string
	base string // postgres://test@127.0.0.1:port
	dir  string
	bin  string
	cred *syscall.Credential
}

func binDir() string {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real)
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return ""
	}
	return filepath.Dir(matches[len(matches)-1])
}

func skipWithout(t testing.TB) string {
	t.Helper()
	bin := binDir()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL's initdb/pg_ctl are missing; scripts/install-postgresql.sh installs them")
		}
		t.Skip("PostgreSQL's initdb/pg_ctl are missing (Debian postgresql; scripts/install-postgresql.sh); skipping")
	}
	return bin
}

// Start starts a server of t's own, stopped and removed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := start(skipWithout(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close() })
	return s
}

func start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			return nil, fmt.Errorf("initdb refuses root and there is no postgres or nobody user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := errors.Join(os.Chmod(dir, 0o755), os.Chown(dir, uid, gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := s.run("initdb", "-D", data, "-U", "test", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if err := s.run("pg_ctl", "-D", data, "-w", "-l", filepath.Join(dir, "log"), "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", port, dir), "start"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.base = fmt.Sprintf("postgres://test@127.0.0.1:%d", port)
	s.URL = s.base + "/postgres?sslmode=disable"
	return s, nil
}

// Stop stops the server at once (what an unreachable database looks like to its clients).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) stop() error {
	data := filepath.Join(s.dir, "data")
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err != nil {
		return nil
	}
	return s.run("pg_ctl", "-D", data, "-w", "-m", "immediate", "stop")
}

func (s *Server) close() {
	_ = s.stop()
	_ = os.RemoveAll(s.dir)
}

func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("%s: %w\n%s\nserver log: %s", name, err, out.String(), log)
	}
	return nil
}

// shared is the test binary's one server of Database.
var shared struct {
	sync.Mutex
	srv  *Server
	next int
}

// Database returns the URL of a fresh, empty database on a server shared by the test binary's
// tests (initdb takes seconds, a database milliseconds). TestMain calls StopShared after m.Run.
func Database(t testing.TB) string {
	t.Helper()
	bin := skipWithout(t)
	shared.Lock()
	defer shared.Unlock()
	if shared.srv == nil {
		s, err := start(bin)
		if err != nil {
			t.Fatal(err)
		}
		shared.srv = s
	}
	shared.next++
	name := fmt.Sprintf("test%d", shared.next)
	db, err := sql.Open("pgx", shared.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return shared.srv.base + "/" + name + "?sslmode=disable"
}

// StopShared stops Database's server, if one was started.
func StopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.srv != nil {
		shared.srv.close()
		shared.srv = nil
	}
}
