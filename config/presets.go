package config

import (
	"slices"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// The model facts config checks the settings against (MODEL_RUNNER, MODEL_SERVICE, MODEL and
// the MODEL x DEVICE presets) are runners/catalogue's; this file only asks it.

// KnownRunners lists the MODEL_RUNNER names in the catalogue's order (HEAD's ModelRunners as
// served here), then "mock".
func KnownRunners() []string {
	var names []string
	for _, m := range catalogue.Models() {
		names = append(names, m.Name)
	}
	return append(names, catalogue.RunnerMock)
}

// knownServices are the MODEL_SERVICE values.
func knownServices() []string {
	var out []string
	for _, s := range catalogue.Services() {
		out = append(out, string(s))
	}
	return out
}

// ServiceForRunner maps a MODEL_RUNNER to the service that mounts it ("image", "audio" or
// "cnn"), as HEAD's MODEL_SERVICE_RUNNER_MAP. "mock" serves any of them, so it needs
// MODEL_SERVICE, and is an error here as it is in Python.
func ServiceForRunner(runner string) (string, error) {
	if m, ok := catalogue.Lookup(runner); ok {
		return string(m.Service), nil
	}
	if runner == catalogue.RunnerMock {
		return "", invalid("MODEL_SERVICE", "", "MODEL_RUNNER=mock serves no fixed service; set MODEL_SERVICE to one of %s", strings.Join(knownServices(), "|"))
	}
	return "", invalid("MODEL_RUNNER", runner, "accepted: %s", strings.Join(KnownRunners(), ", "))
}

// modelNames lists the MODEL values, in catalogue order.
func modelNames() string {
	var names []string
	for _, m := range catalogue.Models() {
		for _, n := range m.ModelNames {
			names = append(names, n.Name)
		}
	}
	return strings.Join(names, ", ")
}

// devicesWithPreset lists, in DEVICE order, the devices that have a preset for the model.
func devicesWithPreset(m catalogue.Model) []string {
	var out []string
	for _, d := range catalogue.Devices() {
		if _, ok := m.Presets[d]; ok {
			out = append(out, d)
		}
	}
	return out
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
