//go:build cgo

package ttnn

/*
#include <stdlib.h>
#include "include/ttbridge.h"
*/
import "C"

import "context"

// Trace is a captured sequence of program runs.
type Trace struct {
	dev      *Device
	id       C.ttb_trace_id
	cq       int
	ended    bool // device goroutine only
	released bool // device goroutine only
}

// BeginTrace starts capturing the program runs issued on the device until End. Every program
// run in a capture must have run before, and tensors may not be read or written meanwhile.
func (d *Device) BeginTrace(ctx context.Context, cq int) (*Trace, error) {
	if cq < 0 {
		return nil, invalid("begin trace", "command queue %d", cq)
	}
	var tr *Trace
	err := d.do(ctx, "begin trace", func() error {
		var id C.ttb_trace_id
		if err := check("begin trace", C.ttb_trace_begin(d.h, C.uint32_t(cq), &id)); err != nil {
			return err
		}
		tr = &Trace{dev: d, id: id, cq: cq}
		d.traces[tr] = struct{}{}
		return nil
	})
	return tr, err
}

// ID is the backend's trace id.
func (tr *Trace) ID() uint64 { return uint64(tr.id) }

// End finishes the capture. If the trace does not fit in the trace region it is discarded
// and End returns ErrOutOfMemory.
func (tr *Trace) End(ctx context.Context) error {
	return tr.dev.do(ctx, "end trace", func() error {
		if tr.released {
			return &Error{Op: "end trace", Msg: "trace is released", Kind: ErrClosed}
		}
		st := C.ttb_trace_end(tr.dev.h, tr.id, C.uint32_t(tr.cq))
		if st == C.TTB_OUT_OF_MEMORY {
			tr.released = true
			delete(tr.dev.traces, tr)
		}
		if err := check("end trace", st); err != nil {
			return err
		}
		tr.ended = true
		return nil
	})
}

// Replay executes the captured runs again on the trace's command queue, reading the current
// contents of the captured input tensors and overwriting the captured outputs.
func (tr *Trace) Replay(ctx context.Context, blocking bool) error {
	b := C.int(0)
	if blocking {
		b = 1
	}
	return tr.dev.do(ctx, "replay trace", func() error {
		if tr.released {
			return &Error{Op: "replay trace", Msg: "trace is released", Kind: ErrClosed}
		}
		return check("replay trace", C.ttb_trace_replay(tr.dev.h, tr.id, C.uint32_t(tr.cq), b))
	})
}

// Release frees the trace's buffers. It is idempotent.
func (tr *Trace) Release() error {
	err := tr.dev.do(context.Background(), "release trace", func() error {
		if tr.released {
			return nil
		}
		if err := check("release trace", C.ttb_trace_release(tr.dev.h, tr.id)); err != nil {
			return err
		}
		tr.released = true
		delete(tr.dev.traces, tr)
		return nil
	})
	if isClosed(err) {
		return nil
	}
	return err
}

// RecordEvent records an event on command queue cq.
func (d *Device) RecordEvent(ctx context.Context, cq int) (Event, error) {
	if cq < 0 {
		return 0, invalid("record event", "command queue %d", cq)
	}
	var ev C.ttb_event_id
	err := d.do(ctx, "record event", func() error { return check("record event", C.ttb_event_record(d.h, C.uint32_t(cq), &ev)) })
	return Event(ev), err
}

// WaitEvent makes command queue cq wait (on the device) for ev.
func (d *Device) WaitEvent(ctx context.Context, cq int, ev Event) error {
	if cq < 0 {
		return invalid("wait event", "command queue %d", cq)
	}
	return d.do(ctx, "wait event", func() error {
		return check("wait event", C.ttb_event_wait(d.h, C.uint32_t(cq), C.ttb_event_id(ev)))
	})
}

// SynchronizeEvent blocks the host until ev has completed.
func (d *Device) SynchronizeEvent(ctx context.Context, ev Event) error {
	return d.do(ctx, "synchronize event", func() error {
		return check("synchronize event", C.ttb_event_synchronize(d.h, C.ttb_event_id(ev)))
	})
}
