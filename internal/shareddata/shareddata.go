// Package shareddata locates, for tests, the golden data that lives outside the repository:
// ../shared/testdata beside it (its README says how each file was made), and the goldens the
// project's own scripts generate from upstream code (scripts/gen-t5-goldens.sh), kept in
// $TT_GOLDEN_DIR (default ~/.cache/tt-media-server-go/goldens) because ../shared/testdata may be
// read-only. A test whose data is absent is skipped with a message naming the missing path; the
// data is never copied into the repository.
package shareddata

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is ../shared/testdata relative to the repository root (found from this file's path, so
// it does not depend on the test's working directory).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "testdata")
}

// GeneratedRoot is where the project's golden scripts write: $TT_GOLDEN_DIR, or
// ~/.cache/tt-media-server-go/goldens.
func GeneratedRoot() string {
	if d := os.Getenv("TT_GOLDEN_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "tt-media-server-go", "goldens")
}

// Dir returns Root()/sub, or else GeneratedRoot()/sub, or skips t when neither exists. hint,
// when given, says how to make the data.
func Dir(t testing.TB, sub string, hint ...string) string {
	t.Helper()
	p := filepath.Join(Root(), sub)
	if _, err := os.Stat(p); err != nil && GeneratedRoot() != "" {
		if g := filepath.Join(GeneratedRoot(), sub); dirExists(g) {
			return g
		}
	}
	if _, err := os.Stat(p); err != nil {
		msg := "the shared test data lives beside the repository, in ../shared/testdata"
		if len(hint) > 0 {
			msg = hint[0]
		}
		t.Skipf("shared test data %s is absent (%v): %s; skipping", p, err, msg)
	}
	return p
}

// File returns Root()/sub/name, or skips t when it is absent.
func File(t testing.TB, sub, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t, sub), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test file %s is absent (%v); skipping", p, err)
	}
	return p
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Generated returns the directory of goldens that a project script generates (GeneratedRoot()/sub,
// or Root()/sub when present there). When it is absent the test is skipped with hint (the
// command that makes it), except in CI (CI=true), where a missing golden fails the test.
func Generated(t testing.TB, sub, hint string) string {
	t.Helper()
	for _, p := range []string{filepath.Join(Root(), sub), filepath.Join(GeneratedRoot(), sub)} {
		if dirExists(p) {
			return p
		}
	}
	msg := "goldens " + sub + " are absent from " + GeneratedRoot() + " and " + Root() + ": " + hint
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipping")
	return ""
}

// GeneratedFile returns the file name in Generated(t, sub, hint), skipped (failed under
// CI=true) like a missing directory when that file is absent: goldens of an older format lack
// the files a newer script adds.
func GeneratedFile(t testing.TB, sub, name, hint string) string {
	t.Helper()
	p := filepath.Join(Generated(t, sub, hint), name)
	if _, err := os.Stat(p); err != nil {
		msg := "golden " + p + " is absent (" + err.Error() + "): " + hint
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; skipping")
	}
	return p
}
