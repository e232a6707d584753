//go:build race

package audio

// raceEnabled: the race detector slows go-mp3 about 25×; the longest MP3 decode is skipped then.
const raceEnabled = true
