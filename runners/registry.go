package runners

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/config"
)

// WorkerSpec tells a runner factory which device group it drives.
type WorkerSpec struct {
	// WorkerID is the device group as written in DEVICE_IDS ("0", "0,1"; "" = all devices).
	WorkerID string
	// Devices are the chip ids of the group.
	Devices []int
	// Mesh is the mesh the worker opens on its group.
	Mesh config.MeshShape
	// Settings are the process settings (read-only).
	Settings *config.Settings
}

// Factory builds a runner for one device group. It must not touch the device; Warmup does.
type Factory func(spec WorkerSpec) (Runner, error)

// entry is one registered MODEL_RUNNER.
type entry struct {
	service Service
	factory Factory
}

// Registry maps MODEL_RUNNER names to runner factories.
type Registry struct {
	entries map[string]entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{entries: map[string]entry{}} }

// Register adds a runner under name, serving service. A second registration replaces the first.
func (r *Registry) Register(name string, service Service, f Factory) {
	r.entries[name] = entry{service: service, factory: f}
}

// Names lists the registered runner names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Service tells which API family the named runner serves.
func (r *Registry) Service(name string) (Service, error) {
	e, ok := r.entries[name]
	if !ok {
		return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownRunner, name, strings.Join(r.Names(), ", "))
	}
	return e.service, nil
}

// New builds the named runner for one device group.
func (r *Registry) New(name string, spec WorkerSpec) (Runner, error) {
	e, ok := r.entries[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownRunner, name, strings.Join(r.Names(), ", "))
	}
	return e.factory(spec)
}

// Factory returns the factory registered under name, so a later registration can wrap it
// (e.g. fall back to it when its own model files are missing).
func (r *Registry) Factory(name string) (Factory, bool) {
	e, ok := r.entries[name]
	return e.factory, ok
}

// SimPipelineBlocker says why a runner's real host pipeline (Whisper, SDXL, SD3.5) cannot serve
// a worker under these settings, or "" when it can. The pipelines' device programs exist as
// simulator manifests only, so they need mock-device mode, model files in MODEL_WEIGHTS_PATH,
// and a device of their own: a worker process, a submesh of the shared parent mesh
// (sharedParent), or the only device group of the process (the simulator, like TT-Metal,
// opens one device per process). The factories fall back to the mock runners otherwise.
func SimPipelineBlocker(s *config.Settings, sharedParent bool) string {
	switch {
	case s == nil:
		return "no settings"
	case s.ModelWeightsPath == "":
		return "MODEL_WEIGHTS_PATH is not set"
	case !s.Mock:
		return "the pipeline's device programs exist for the simulator only"
	case s.WorkerIsolation != config.IsolationProcess && len(s.DeviceGroups) > 1 && !sharedParent:
		return "several in-process device groups cannot each open the simulator"
	}
	return ""
}
