//go:build !cgo || !ttnn

package ttnn

// FakeRuntime returns the fake tt::runtime's counters; ok is false unless the metal backend is
// built (tag ttnn) and linked against the fake (tests under scripts/check-metal.sh).
func FakeRuntime() (stats FakeRuntimeStats, ok bool) { return FakeRuntimeStats{}, false }
