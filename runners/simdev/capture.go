package simdev

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Capture records run — one or more program runs on command queue 0 — in a trace of dev. On
// success it returns the trace and run's outputs, which every replay of the trace rewrites; on
// failure it releases the trace and frees the outputs, and returns the first error (a program
// run's, else the end of the capture's), unmapped: callers wrap it with DeviceErr or their
// own words.
func Capture(ctx context.Context, dev *ttnn.Device, run func(context.Context) ([]*ttnn.Tensor, error)) (*ttnn.Trace, []*ttnn.Tensor, error) {
	tr, err := dev.BeginTrace(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	outs, err := run(ctx)
	if endErr := tr.End(ctx); err == nil {
		err = endErr
	}
	if err != nil {
		_ = tr.Release()
		for _, o := range outs {
			if o != nil {
				_ = o.Free()
			}
		}
		return nil, nil, err
	}
	return tr, outs, nil
}

// DeviceErr marks a lost device and a dispatch timeout (which poisons the device) as
// runners.ErrDeviceLost, so the worker is restarted after a device reset. Every runner that
// drives ttnn — simulated or real pipeline — maps its device errors here.
func DeviceErr(err error) error {
	if err != nil && (errors.Is(err, ttnn.ErrDeviceLost) || errors.Is(err, ttnn.ErrTimeout)) && !errors.Is(err, runners.ErrDeviceLost) {
		return fmt.Errorf("%w: %w", runners.ErrDeviceLost, err)
	}
	return err
}

// OpenDevice opens opts for a runner: the submesh of parent (in process, under the server's
// parent mesh) when parent is not nil, else a device of its own (a worker process).
func OpenDevice(ctx context.Context, parent *ttnn.Device, opts ttnn.Options) (*ttnn.Device, error) {
	if parent != nil {
		return parent.OpenSubmesh(ctx, opts)
	}
	return ttnn.Open(ctx, opts)
}
