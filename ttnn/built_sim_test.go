//go:build cgo && !ttnn

package ttnn

// metalBuilt says whether this test binary carries the metal backend (build tag ttnn).
const metalBuilt = false
