package bench

import "errors"

var (
	// ErrConfig reports an invalid run configuration.
	ErrConfig = errors.New("bench: invalid configuration")
	// ErrRemoteTarget reports a non-loopback target without an explicit allowance.
	ErrRemoteTarget = errors.New("bench: target is not a loopback address (pass --allow-remote to benchmark it)")
	// ErrTargets reports an unreadable or malformed targets file.
	ErrTargets = errors.New("bench: invalid targets file")
)
