package simdev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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

// WriteManifest writes the simulator program manifest name.ttbsim of set into dir, compiled
// for mesh (its "mesh" line rewritten), and returns the file's path for ttnn.Device.LoadProgram
// (the simulator loads programs from files). Its errors read "program <name>: ...".
func WriteManifest(set fs.FS, dir, name string, mesh ttnn.MeshShape) (string, error) {
	src, err := fs.ReadFile(set, name+".ttbsim")
	if err != nil {
		return "", fmt.Errorf("program %s: %w", name, err)
	}
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "mesh" {
			lines[i] = fmt.Sprintf("mesh %d %d", mesh.Rows, mesh.Cols)
		}
	}
	path := filepath.Join(dir, name+".ttbsim")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		return "", fmt.Errorf("program %s: %w", name, err)
	}
	return path, nil
}
