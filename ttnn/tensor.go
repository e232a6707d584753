//go:build cgo

package ttnn

/*
#include <stdlib.h>
#include "include/ttbridge.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// Tensor is a tensor owned by a device.
type Tensor struct {
	dev  *Device
	h    *C.ttb_tensor // device goroutine only
	desc TensorDesc
	opts TensorOptions
}

func (d *Device) adopt(h *C.ttb_tensor, desc TensorDesc, opts TensorOptions) *Tensor {
	t := &Tensor{dev: d, h: h, desc: desc, opts: opts}
	t.desc.Shape = append([]int(nil), desc.Shape...)
	d.tensors[t] = struct{}{}
	return t
}

func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// Upload creates a device tensor from row-major host data on command queue cq.
func (d *Device) Upload(ctx context.Context, cq int, desc TensorDesc, opts TensorOptions, data []byte) (*Tensor, error) {
	cd, err := cDesc("upload", desc)
	if err != nil {
		return nil, err
	}
	if cq < 0 {
		return nil, invalid("upload", "command queue %d", cq)
	}
	var t *Tensor
	err = d.do(ctx, "upload", func() error {
		var h *C.ttb_tensor
		retain := C.int(0)
		if opts.Retain {
			retain = 1
		}
		if err := check("upload", C.ttb_tensor_upload(d.h, &cd, bytesPtr(data), C.size_t(len(data)), C.uint32_t(opts.Placement),
			C.uint32_t(opts.Layout), retain, C.uint32_t(cq), &h)); err != nil {
			return err
		}
		t = d.adopt(h, desc, opts)
		return nil
	})
	return t, err
}

// Alloc creates a persistent (retained) device tensor with unspecified contents, e.g. a trace
// input slot to fill with Write.
func (d *Device) Alloc(ctx context.Context, desc TensorDesc, opts TensorOptions) (*Tensor, error) {
	cd, err := cDesc("alloc", desc)
	if err != nil {
		return nil, err
	}
	opts.Retain = true
	var t *Tensor
	err = d.do(ctx, "alloc", func() error {
		var h *C.ttb_tensor
		if err := check("alloc", C.ttb_tensor_alloc(d.h, &cd, C.uint32_t(opts.Placement), C.uint32_t(opts.Layout), &h)); err != nil {
			return err
		}
		t = d.adopt(h, desc, opts)
		return nil
	})
	return t, err
}

// Desc is the tensor's descriptor.
func (t *Tensor) Desc() TensorDesc {
	d := t.desc
	d.Shape = append([]int(nil), t.desc.Shape...)
	return d
}

// Options are the placement options the tensor was made with.
func (t *Tensor) Options() TensorOptions { return t.opts }

// Write copies row-major host data into the tensor on command queue cq.
func (t *Tensor) Write(ctx context.Context, cq int, src []byte) error {
	if cq < 0 {
		return invalid("write", "command queue %d", cq)
	}
	return t.dev.do(ctx, "write", func() error {
		if t.h == nil {
			return &Error{Op: "write", Msg: "tensor is freed", Kind: ErrClosed}
		}
		return check("write", C.ttb_tensor_write(t.h, bytesPtr(src), C.size_t(len(src)), C.uint32_t(cq)))
	})
}

// Read copies the tensor (row-major, untilized) into dst, which must have Desc().Bytes() bytes.
func (t *Tensor) Read(ctx context.Context, cq int, dst []byte) error {
	if cq < 0 {
		return invalid("read", "command queue %d", cq)
	}
	return t.dev.do(ctx, "read", func() error {
		if t.h == nil {
			return &Error{Op: "read", Msg: "tensor is freed", Kind: ErrClosed}
		}
		return check("read", C.ttb_tensor_read(t.h, bytesPtr(dst), C.size_t(len(dst)), C.uint32_t(cq)))
	})
}

// Free releases the tensor. It is idempotent; a tensor used by a live trace cannot be freed
// (ErrBusy) until the trace is released.
func (t *Tensor) Free() error {
	err := t.dev.do(context.Background(), "free tensor", func() error {
		if t.h == nil {
			return nil
		}
		if err := check("free tensor", C.ttb_tensor_free(t.h)); err != nil {
			return err
		}
		t.h = nil
		delete(t.dev.tensors, t)
		return nil
	})
	if isClosed(err) {
		return nil
	}
	return err
}
