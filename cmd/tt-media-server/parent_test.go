package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestParentMesh(t *testing.T) {
	g := func(id string, devs ...int) config.DeviceGroup { return config.DeviceGroup{ID: id, Devices: devs} }
	tests := []struct {
		name    string
		groups  []config.DeviceGroup
		mesh    config.MeshShape
		want    ttnn.MeshShape
		ids     []int
		wantErr string
	}{
		{"single chips", []config.DeviceGroup{g("0", 0), g("1", 1), g("2", 2)}, config.MeshShape{Rows: 1, Cols: 1},
			ttnn.MeshShape{Rows: 3, Cols: 1}, []int{0, 1, 2}, ""},
		{"TP2 pairs stack by rows", []config.DeviceGroup{g("0,1", 0, 1), g("2,3", 2, 3)}, config.MeshShape{Rows: 2, Cols: 1},
			ttnn.MeshShape{Rows: 4, Cols: 1}, []int{0, 1, 2, 3}, ""},
		{"1x2 groups", []config.DeviceGroup{g("4,5", 4, 5), g("0,1", 0, 1)}, config.MeshShape{Rows: 1, Cols: 2},
			ttnn.MeshShape{Rows: 2, Cols: 2}, []int{4, 5, 0, 1}, ""},
		{"a group larger than the mesh uses its first chips", []config.DeviceGroup{g("0,1", 0, 1), g("2,3", 2, 3)}, config.MeshShape{Rows: 1, Cols: 1},
			ttnn.MeshShape{Rows: 2, Cols: 1}, []int{0, 2}, ""},
		{"zero mesh is 1x1", []config.DeviceGroup{g("3", 3)}, config.MeshShape{}, ttnn.MeshShape{Rows: 1, Cols: 1}, []int{3}, ""},
		{"all chips", []config.DeviceGroup{g("")}, config.MeshShape{Rows: 2, Cols: 4}, ttnn.MeshShape{Rows: 2, Cols: 4}, nil, ""},
		{"all chips and others", []config.DeviceGroup{g(""), g("1", 1)}, config.MeshShape{Rows: 1, Cols: 1}, ttnn.MeshShape{}, nil,
			`device group "" (all chips) cannot share the parent mesh with other groups`},
		{"group too small", []config.DeviceGroup{g("0,1", 0, 1), g("2", 2)}, config.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshShape{}, nil,
			"device group (2) has 1 chips; the 1x2 mesh needs 2"},
		{"chip in two groups", []config.DeviceGroup{g("0,1", 0, 1), g("1,2", 1, 2)}, config.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshShape{}, nil,
			"chip 1 is in device groups (0,1) and (1,2)"},
		{"no groups", nil, config.MeshShape{Rows: 1, Cols: 1}, ttnn.MeshShape{}, nil, "no device groups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mesh, ids, err := parentMesh(tt.groups, tt.mesh)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, mesh)
			require.Equal(t, tt.ids, ids)
		})
	}
}

func TestParentOptions(t *testing.T) {
	base := func(runners ...string) *config.Settings {
		s := &config.Settings{TraceRegionSize: 34_541_598, DeviceMeshShape: config.MeshShape{Rows: 1, Cols: 1}}
		for _, r := range runners {
			s.Pools = append(s.Pools, config.Pool{Runner: r})
		}
		return s
	}
	tests := []struct {
		name string
		s    *config.Settings
		want ttnn.Options
	}{
		{"sdxl", base("tt-sdxl-trace"), ttnn.Options{L1SmallSize: 32768, TraceRegionSize: 34_541_598, CommandQueues: 1, ProgramCache: true}},
		{"resnet", base("tt-xla-resnet"), ttnn.Options{L1SmallSize: 32768, TraceRegionSize: 1_470_464, CommandQueues: 2, ProgramCache: true}},
		{"sdxl and whisper pools: the largest of each", base("tt-sdxl-trace", "tt-whisper"),
			ttnn.Options{L1SmallSize: 32768, TraceRegionSize: 100_000_000, CommandQueues: 2, ProgramCache: true}},
		{"an unknown runner: the most a known model needs (SpeechT5's l1_small_size 150000)", base("some-new-runner"),
			ttnn.Options{L1SmallSize: 150_000, TraceRegionSize: 100_000_000, CommandQueues: 2, ProgramCache: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, parentOptions(tt.s))
		})
	}
}
