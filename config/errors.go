package config

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every validation error: a setting that cannot be parsed, is out of
// range, or contradicts another setting.
var ErrInvalid = errors.New("invalid setting")

// SettingError names the environment variable, the offending value and what is accepted.
// Its message is one line: `invalid MAX_QUEUE_SIZE="0": must be an integer >= 1`.
type SettingError struct {
	Key   string // environment variable, e.g. "MAX_QUEUE_SIZE"
	Value string // the value as read (or as derived, e.g. from a preset)
	Msg   string // what is wrong / what is accepted
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s %s=%q: %s", ErrInvalid, e.Key, e.Value, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *SettingError) Unwrap() error { return ErrInvalid }

func invalid(key, value, format string, args ...any) error {
	return &SettingError{Key: key, Value: value, Msg: fmt.Sprintf(format, args...)}
}
