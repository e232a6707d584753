package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModelPools(t *testing.T) {
	t.Run("two pools on a Galaxy-like split", func(t *testing.T) {
		s := load(t, env{"MODEL_POOLS": "tt-sdxl-trace:(0),(1),(2); tt-whisper:(3),(4)"}, true)
		require.Equal(t, []Pool{
			{Runner: "tt-sdxl-trace", Service: "image", Groups: []DeviceGroup{{ID: "0", Devices: []int{0}}, {ID: "1", Devices: []int{1}}, {ID: "2", Devices: []int{2}}}},
			{Runner: "tt-whisper", Service: "audio", Groups: []DeviceGroup{{ID: "3", Devices: []int{3}}, {ID: "4", Devices: []int{4}}}},
		}, s.Pools)
		require.Equal(t, "tt-sdxl-trace:(0),(1),(2);tt-whisper:(3),(4)", s.Redacted()["MODEL_POOLS"])
	})
	t.Run("without MODEL_POOLS one pool from MODEL_RUNNER", func(t *testing.T) {
		s := load(t, env{"MODEL_RUNNER": "tt-whisper", "DEVICE_IDS": "(0),(1)"}, true)
		require.Len(t, s.Pools, 1)
		require.Equal(t, "tt-whisper", s.Pools[0].Runner)
		require.Equal(t, "audio", s.Pools[0].Service)
		require.Len(t, s.Pools[0].Groups, 2)
	})
	for _, tc := range []struct{ value, want string }{
		{"tt-sdxl-trace", "is not runner:DEVICE_IDS"},
		{"nope:(0)", "accepted runners"},
		{"tt-sdxl-trace:(0);tt-sd3.5:(1)", "both serve the image routes"},
		{"tt-sdxl-trace:(0),(1);tt-whisper:(1)", "chip 1 is in both"},
		{"tt-sdxl-trace:(0),(9)", "chip 9 of tt-sdxl-trace does not exist"},
		{"tt-whisper:(x)", "device ids of tt-whisper"},
		{"tt-whisper:", "must name their chips"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			_, err := LoadFrom(env{"MODEL_POOLS": tc.value}.lookup, "", true)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), "MODEL_POOLS")
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
