package catalogue

import (
	"fmt"
	"strings"
	"time"
)

// entries is the catalogue, in the order of HEAD's ModelRunners as this server lists them
// (KnownRunners): the image models, then audio, CNN, text-to-speech and video. A new service
// adds its list here.
var entries = concat(imageModels, newImageModels, audioModels, cnnModels, speechModels, videoModels)

func concat(lists ...[]Model) []Model {
	var out []Model
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// DeviceIds values of HEAD's constants.
const (
	deviceIDs1 = "(0)"
	deviceIDs4 = "(0),(1),(2),(3)"
)

var (
	deviceIDs32 = singleChipGroups(32)
	one         = [2]int{1, 1}
)

// singleChipGroups renders "(0),(1),…,(n-1)".
func singleChipGroups(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("(%d)", i)
	}
	return strings.Join(parts, ",")
}

// DefaultTraceRegionSize is HEAD's TRACE_REGION_SIZE default, SDXL's region (config's
// default tag spells the same number, which a test checks).
const DefaultTraceRegionSize = 34_541_598

// headTimeouts gives a copy of presets with HEAD's request_processing_timeout_seconds of the
// cells that set one (seconds by DEVICE); the other cells keep the deadline alone.
func headTimeouts(presets map[string]Preset, seconds map[string]int) map[string]Preset {
	out := make(map[string]Preset, len(presets))
	for d, p := range presets {
		if s, ok := seconds[d]; ok {
			p.RequestTimeout = time.Duration(s) * time.Second
		}
		out[d] = p
	}
	for d := range seconds {
		if _, ok := presets[d]; !ok {
			panic("catalogue: a timeout for " + d + ", which has no cell")
		}
	}
	return out
}
