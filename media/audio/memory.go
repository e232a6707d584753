package audio

import (
	"errors"
	"io"
)

// decodeOverhead is the fixed part of a decode's memory estimate: the decoders' own state and
// buffers.
const decodeOverhead = 256 << 10

// DecodeCost estimates the memory decoding frames source frames at rate Hz to target Hz
// (0: rate) holds at its peak: the mono samples at the source rate (counted twice: buffers
// grow by appending, and a grown buffer's old array is garbage until collected), the resampled
// copy and the decoder's own buffers.
func DecodeCost(frames int64, rate, target int) int64 {
	if rate <= 0 {
		return decodeOverhead
	}
	if target <= 0 {
		target = rate
	}
	out := frames*int64(target)/int64(rate) + 1
	return 8*frames + 4*out + decodeOverhead
}

// meter holds a decode's reservation (Limits.Reserve): decoders ask it for their frames before
// decoding them, from the count their container states (checkDuration), and again as they
// decode past what they reserved (grow), so a decode never holds more than it reserved and
// stops when the reservation cannot grow.
type meter struct {
	reserve func(n int64) error
	target  int
	held    int64 // bytes reserved so far
	frames  int64 // the source frames (at rate) they cover
	rate    int
	extra   int64 // bytes held besides samples (ffmpeg's output)
}

// ReserveError wraps the error of Limits.Reserve: the decode stopped because its memory could
// not be reserved (the caller's budget refused or timed out).
type ReserveError struct{ Err error }

func (e *ReserveError) Error() string { return "audio: decoding memory: " + e.Err.Error() }
func (e *ReserveError) Unwrap() error { return e.Err }

// isReserveError reports whether err is a refused reservation (passed through unchanged).
func isReserveError(err error) bool {
	var re *ReserveError
	return errors.As(err, &re)
}

// need makes sure frames source frames at rate are reserved.
func (m *meter) need(frames int64, rate int) error {
	if m == nil || rate <= 0 || (rate == m.rate && frames <= m.frames) {
		return nil
	}
	cost := DecodeCost(frames, rate, m.target) + m.extra
	if cost > m.held {
		if err := m.reserve(cost - m.held); err != nil {
			return &ReserveError{err}
		}
		m.held = cost
	}
	m.frames, m.rate = frames, rate
	return nil
}

// grow is need for a decoder whose output passed what it reserved (a container that states no
// length, or understates it): it reserves half as much again, so a long stream asks a few
// times, not once per packet.
func (m *meter) grow(frames int64, rate int) error {
	if m == nil || (rate == m.rate && frames <= m.frames) {
		return nil
	}
	return m.need(frames+frames/2, rate)
}

// hold adds n bytes that are not samples (ffmpeg's output as it is read) to the reservation.
func (m *meter) hold(n int64) error {
	if m == nil || n <= 0 {
		return nil
	}
	if err := m.reserve(n); err != nil {
		return &ReserveError{err}
	}
	m.held += n
	m.extra += n
	return nil
}

// meteredReader reserves what is read through it, in steps of at least 1 MiB, before it is
// read (io.ReadAll doubles its buffer: twice the bytes).
type meteredReader struct {
	r        io.Reader
	m        *meter
	read     int64
	reserved int64
}

func (r *meteredReader) Read(p []byte) (int, error) {
	if r.read+int64(len(p)) > r.reserved/2 {
		step := max(int64(len(p)), 1<<20, r.reserved/2)
		if err := r.m.hold(2 * step); err != nil {
			return 0, err
		}
		r.reserved += 2 * step
	}
	n, err := r.r.Read(p)
	r.read += int64(n)
	return n, err
}
