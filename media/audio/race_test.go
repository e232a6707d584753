//go:build race

package audio

// raceEnabled: tests that spawn external tools and would take long under the race detector skip.
const raceEnabled = true
