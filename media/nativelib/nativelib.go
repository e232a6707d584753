// Package nativelib is the run-time loading state that every native codec package of media/
// shares (media/turbojpeg, media/webp): open the library once on first use, remember which file
// loaded or why none did, and the process-wide switch to the package's pure-Go twin
// (NATIVE_CODECS=off). It has no cgo itself: each codec package passes its own dlopen.
package nativelib

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrNotBuilt is what a codec package's open function returns in a build without its native
// path (no cgo, or the nonative tag): Load stops at once.
var ErrNotBuilt = errors.New("built without cgo or with the nonative tag")

// Lib is one native library.
type Lib struct {
	// What names the library in messages ("libjpeg-turbo").
	What string
	// Names are the file names tried in order.
	Names []string
	// Open loads one file name (dlopen and symbol look-up) or says why it cannot.
	Open func(name string) error

	once     sync.Once
	err      error
	loaded   string
	disabled atomic.Bool
}

// Load opens the library once and reports why it could not be used (nil when it is).
func (l *Lib) Load() error {
	l.once.Do(func() {
		var errs []error
		for _, n := range l.Names {
			err := l.Open(n)
			if err == nil {
				l.loaded = n
				return
			}
			if errors.Is(err, ErrNotBuilt) {
				l.err = err
				return
			}
			errs = append(errs, err)
		}
		l.err = fmt.Errorf("%s not loaded: %w", l.What, errors.Join(errs...))
	})
	return l.err
}

// SetEnabled chooses between the library (true, the default, when it loads) and the pure-Go
// twin (false) for all later calls.
func (l *Lib) SetEnabled(on bool) { l.disabled.Store(!on) }

// Native reports whether calls go to the library.
func (l *Lib) Native() bool { return !l.disabled.Load() && l.Load() == nil }

// Describe says which codec serves the calls, for the start-up log and /tt-liveness: the
// library and its file, or "pure Go (twin; reason)".
func (l *Lib) Describe(twin string) string {
	switch {
	case l.disabled.Load():
		return "pure Go (" + twin + "; native codecs switched off)"
	case l.Load() != nil:
		return "pure Go (" + twin + "; " + l.Load().Error() + ")"
	}
	return l.What + " (" + l.loaded + ")"
}
