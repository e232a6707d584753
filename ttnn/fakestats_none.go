//go:build !cgo || !ttnn

package ttnn

// FakeRuntime returns the fake tt::runtime's counters; ok is false unless the metal backend is
// built (tag ttnn) and linked against the fake (tests under scripts/check-metal.sh).
func FakeRuntime() (stats FakeRuntimeStats, ok bool) { return FakeRuntimeStats{}, false }

// FakeSubmits returns the fake tt::runtime's submit log from submit index from on (the last
// 4096 submits are kept) and the index after the last; ok is false unless the metal backend is
// linked against the fake.
func FakeSubmits(from uint64) (log []FakeSubmit, next uint64, ok bool) { return nil, 0, false }
