package config

import (
	"strings"
)

// Pool is one model served by the process: its runner, API family and device groups. Without
// MODEL_POOLS there is one pool, from MODEL_RUNNER and DEVICE_IDS.
type Pool struct {
	Runner  string
	Service string
	Groups  []DeviceGroup
	// Backend is "python" when the entry says runner@python (Tenstorrent's Python runner in
	// workers/python processes); "" = DEVICE_BACKEND's.
	Backend string
}

// parsePools reads MODEL_POOLS: "runner:device-ids" entries separated by ';', e.g.
// "tt-sdxl-trace:(0),(1);tt-whisper:(24),(25)". Each pool gets its own queue, workers and routes,
// so at most one pool per API family; no chip may be in two pools.
func parsePools(s *Settings, raw string) ([]Pool, error) {
	var pools []Pool
	seenService := map[string]string{}
	seenChip := map[int]string{}
	for _, entry := range strings.Split(raw, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		runner, ids, ok := strings.Cut(entry, ":")
		runner = strings.TrimSpace(runner)
		runner, backend, _ := strings.Cut(runner, "@")
		runner, backend = strings.TrimSpace(runner), strings.ToLower(strings.TrimSpace(backend))
		if backend != "" && backend != BackendPython {
			return nil, invalid("MODEL_POOLS", raw, "entry %q: backend %q: a pool may say @%s (Tenstorrent's Python runner); others use DEVICE_BACKEND", entry, backend, BackendPython)
		}
		if !ok || runner == "" {
			return nil, invalid("MODEL_POOLS", raw, "entry %q is not runner:DEVICE_IDS (e.g. tt-whisper:(24),(25))", entry)
		}
		svc, err := ServiceForRunner(runner)
		if err != nil {
			return nil, invalid("MODEL_POOLS", raw, "runner %q: accepted runners: %s (mock cannot be pooled)", runner, strings.Join(KnownRunners(), ", "))
		}
		if other, dup := seenService[svc]; dup {
			return nil, invalid("MODEL_POOLS", raw, "%s and %s both serve the %s routes; one pool per API family", other, runner, svc)
		}
		seenService[svc] = runner
		groups, err := ParseDeviceIDs(strings.TrimSpace(ids))
		if err != nil {
			return nil, invalid("MODEL_POOLS", raw, "device ids of %s: %v", runner, err)
		}
		for _, g := range groups {
			if len(g.Devices) == 0 {
				return nil, invalid("MODEL_POOLS", raw, "%s: pools must name their chips (\"\" = all devices cannot be shared)", runner)
			}
			for _, d := range g.Devices {
				if other, dup := seenChip[d]; dup {
					return nil, invalid("MODEL_POOLS", raw, "chip %d is in both %s and %s", d, other, runner)
				}
				seenChip[d] = runner
				if s.Mock && d >= s.MockDevicesCount {
					return nil, invalid("MODEL_POOLS", raw, "chip %d of %s does not exist: mock mode simulates MOCK_DEVICES_COUNT=%d chips", d, runner, s.MockDevicesCount)
				}
			}
		}
		pools = append(pools, Pool{Runner: runner, Service: svc, Groups: groups, Backend: backend})
	}
	if len(pools) == 0 {
		return nil, invalid("MODEL_POOLS", raw, "no pool given")
	}
	return pools, nil
}

// formatPools writes pools back in MODEL_POOLS syntax.
func formatPools(pools []Pool) string {
	parts := make([]string, 0, len(pools))
	for _, p := range pools {
		name := p.Runner
		if p.Backend != "" {
			name += "@" + p.Backend
		}
		parts = append(parts, name+":"+formatGroups(p.Groups))
	}
	return strings.Join(parts, ";")
}
