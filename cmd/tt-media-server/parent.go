package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// parentMesh lays the device groups of every pool out as one parent mesh, as TT-Metal wants
// several groups in one process: k groups of a rows×cols mesh become a (k·rows)×cols parent
// whose chips are, row-major, the first rows·cols chips of each group in order, so group i's
// submesh lies at offset (i·rows, 0). A group "" (all chips) must be the only group: the
// parent is then the mesh itself over the first visible chips (ids nil).
func parentMesh(groups []config.DeviceGroup, mesh config.MeshShape) (ttnn.MeshShape, []int, error) {
	if mesh.Rows <= 0 || mesh.Cols <= 0 {
		mesh = config.MeshShape{Rows: 1, Cols: 1}
	}
	if len(groups) == 0 {
		return ttnn.MeshShape{}, nil, errors.New("no device groups")
	}
	per := mesh.Chips()
	var ids []int
	seen := map[int]string{}
	for _, g := range groups {
		if len(g.Devices) == 0 {
			if len(groups) > 1 {
				return ttnn.MeshShape{}, nil, fmt.Errorf("device group \"\" (all chips) cannot share the parent mesh with other groups")
			}
			return ttnn.MeshShape{Rows: mesh.Rows, Cols: mesh.Cols}, nil, nil
		}
		if len(g.Devices) < per {
			return ttnn.MeshShape{}, nil, fmt.Errorf("device group (%s) has %d chips; the %dx%d mesh needs %d", g.ID, len(g.Devices), mesh.Rows, mesh.Cols, per)
		}
		for _, d := range g.Devices[:per] {
			if other, dup := seen[d]; dup {
				return ttnn.MeshShape{}, nil, fmt.Errorf("chip %d is in device groups (%s) and (%s)", d, other, g.ID)
			}
			seen[d] = g.ID
			ids = append(ids, d)
		}
	}
	return ttnn.MeshShape{Rows: len(groups) * mesh.Rows, Cols: mesh.Cols}, ids, nil
}

// parentOptions are the device options of the shared parent: TT-Metal keeps one set per
// process, so they are the largest any pool's model asks for (L1 small size, trace region,
// command queues, fabric). A runner the catalogue does not know gets the most a catalogued
// model needs.
func parentOptions(s *config.Settings) ttnn.Options {
	o := ttnn.Options{ProgramCache: true, CommandQueues: 1}
	merge := func(m ttnn.Options) {
		o.L1SmallSize = max(o.L1SmallSize, m.L1SmallSize)
		o.TraceRegionSize = max(o.TraceRegionSize, m.TraceRegionSize)
		o.CommandQueues = max(o.CommandQueues, m.CommandQueues)
		o.Fabric = max(o.Fabric, m.Fabric)
	}
	for _, p := range s.Pools {
		if m, ok := simdev.DeviceOptions(p.Runner, s, s.DeviceMeshShape); ok { // "mock" follows MODEL_SERVICE
			merge(m)
			continue
		}
		for _, k := range runners.Models() {
			if m, ok := simdev.DeviceOptions(k.Name, s, s.DeviceMeshShape); ok {
				merge(m)
			}
		}
	}
	return o
}

// openParent opens the parent mesh of in-process mode on the simulator: every pool's device
// groups become submeshes of it, which the runners open with its OpenSubmesh (WorkerSpec.Parent). A build
// without cgo has no device: the runners then keep their time with Go sleeps (nil, nil).
func openParent(ctx context.Context, s *config.Settings, log *slog.Logger) (*ttnn.Device, error) {
	var groups []config.DeviceGroup
	for _, p := range s.Pools {
		groups = append(groups, p.Groups...)
	}
	mesh, ids, err := parentMesh(groups, s.DeviceMeshShape)
	if err != nil {
		return nil, fmt.Errorf("WORKER_ISOLATION=inprocess opens one parent mesh over every device group (DEVICE_IDS=%q, DEVICE_MESH_SHAPE %dx%d): %w",
			s.DeviceIDs, s.DeviceMeshShape.Rows, s.DeviceMeshShape.Cols, err)
	}
	if err := ttnn.Init("sim"); err != nil {
		if errors.Is(err, ttnn.ErrUnsupported) {
			log.Warn("in-process workers have no simulated device (built without cgo); device time is Go sleeps", "err", err)
			return nil, nil
		}
		return nil, fmt.Errorf("simulator: %w", err)
	}
	opts := parentOptions(s)
	opts.Mesh, opts.DeviceIDs = mesh, ids
	if opts.CommandQueues == 2 && mesh.Chips() > 1 {
		opts.Dispatch = ttnn.DispatchEth // two command queues on a multi-chip mesh need ethernet dispatch
	}
	parent, err := ttnn.OpenParent(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("WORKER_ISOLATION=inprocess: open the parent mesh %v over chips %s (one submesh per device group of DEVICE_IDS=%q): %w",
			mesh, chipList(ids), s.DeviceIDs, err)
	}
	log.Info("in-process workers share one parent mesh", "mesh", mesh.String(), "chips", chipList(ids),
		"l1_small_size", opts.L1SmallSize, "trace_region_size", opts.TraceRegionSize, "command_queues", opts.CommandQueues)
	return parent, nil
}

func chipList(ids []int) string {
	if ids == nil {
		return "(the first visible)"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return "(" + strings.Join(parts, ",") + ")"
}
