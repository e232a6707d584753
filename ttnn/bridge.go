//go:build cgo

package ttnn

/*
#cgo CFLAGS: -std=c11 -O2 -Wall
#cgo LDFLAGS: -lm -lpthread
#include <stdlib.h>
#include "include/ttbridge.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

var statusErr = map[C.ttb_status]error{
	C.TTB_INVALID_ARGUMENT: ErrInvalidArgument,
	C.TTB_OUT_OF_MEMORY:    ErrOutOfMemory,
	C.TTB_TIMEOUT:          ErrTimeout,
	C.TTB_DEVICE_LOST:      ErrDeviceLost,
	C.TTB_BUSY:             ErrBusy,
	C.TTB_INTERNAL:         ErrInternal,
	C.TTB_NOT_FOUND:        ErrNotFound,
	C.TTB_UNSUPPORTED:      ErrUnsupported,
}

// check turns a status into an error. It must run on the OS thread that made the call,
// because the message is thread-local.
func check(op string, st C.ttb_status) error {
	if st == C.TTB_OK {
		return nil
	}
	kind, ok := statusErr[st]
	if !ok {
		kind = ErrInternal
	}
	return &Error{Op: op, Msg: C.GoString(C.ttb_last_error()), Kind: kind}
}

// onThread runs a process-level call with the goroutine pinned, so the status and the
// thread-local message come from the same thread.
func onThread(op string, f func() C.ttb_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(op, f())
}

func invalid(op, format string, args ...any) error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...), Kind: ErrInvalidArgument}
}

var (
	initMu      sync.Mutex
	initBackend string
)

// Init selects the backend ("sim" or "metal"; "" means "sim") and initialises its runtime.
// It must precede Open; calling it again with the same backend is a no-op, with another one
// ErrBusy. The runtime reads TT_VISIBLE_DEVICES (and the sim MOCK_DEVICES_COUNT) once, here.
func Init(backend string) error {
	if backend == "" {
		backend = "sim"
	}
	initMu.Lock()
	defer initMu.Unlock()
	if initBackend == backend {
		return nil
	}
	name := C.CString(backend)
	defer C.free(unsafe.Pointer(name))
	if err := onThread("select backend", func() C.ttb_status { return C.ttb_select_backend(name) }); err != nil {
		return err
	}
	if err := onThread("runtime init", func() C.ttb_status { return C.ttb_runtime_init() }); err != nil {
		return err
	}
	initBackend = backend
	return nil
}

func needInit(op string) error {
	initMu.Lock()
	defer initMu.Unlock()
	if initBackend == "" {
		return invalid(op, "ttnn.Init has not been called")
	}
	return nil
}

// Backends lists the backends compiled into this binary.
func Backends() []string { return strings.Split(C.GoString(C.ttb_backends_available()), ",") }

// VisibleChips is the number of chips this process may open (after TT_VISIBLE_DEVICES).
func VisibleChips() (int, error) {
	if err := needInit("visible chips"); err != nil {
		return 0, err
	}
	var n C.uint32_t
	err := onThread("visible chips", func() C.ttb_status { return C.ttb_num_visible_chips(&n) })
	return int(n), err
}

// Counts returns the backend's live handle counters (leak accounting).
func Counts() (LiveCounts, error) {
	if err := needInit("live counts"); err != nil {
		return LiveCounts{}, err
	}
	var c C.ttb_live_counts
	err := onThread("live counts", func() C.ttb_status { return C.ttb_live_counts_get(&c) })
	return LiveCounts{Devices: uint64(c.devices), Programs: uint64(c.programs), Tensors: uint64(c.tensors),
		Traces: uint64(c.traces), TensorBytes: uint64(c.tensor_bytes)}, err
}

// parseVisibleDevices applies the backend's TT_VISIBLE_DEVICES rules to value.
func parseVisibleDevices(value string, set bool, total int) ([]int, error) {
	v := C.CString(value)
	defer C.free(unsafe.Pointer(v))
	var ids [C.TTB_MAX_CHIPS]C.int32_t
	var n C.uint32_t
	isSet := C.int(0)
	if set {
		isSet = 1
	}
	if total < 0 || total > C.TTB_MAX_CHIPS {
		return nil, invalid("parse TT_VISIBLE_DEVICES", "total %d out of range", total)
	}
	err := onThread("parse TT_VISIBLE_DEVICES", func() C.ttb_status {
		return C.ttb_parse_visible_devices(v, isSet, C.uint32_t(total), &ids[0], C.TTB_MAX_CHIPS, &n)
	})
	if err != nil {
		return nil, err
	}
	out := make([]int, int(n))
	for i := range out {
		out[i] = int(ids[i])
	}
	return out, nil
}

func isClosed(err error) bool {
	var e *Error
	return errors.As(err, &e) && errors.Is(e.Kind, ErrClosed)
}
