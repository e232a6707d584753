package runners

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
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
	// Parent is the process's parent mesh in process (WORKER_ISOLATION=inprocess, opened by the
	// server over every group's chips): the runner opens its group's submesh of it. nil in a
	// worker process (which opens a device of its own) and where no device is available.
	Parent *ttnn.Device
}

// Factory builds a runner for one device group. It must not touch the device; Warmup does.
type Factory func(spec WorkerSpec) (Runner, error)

// entry is one registered MODEL_RUNNER: its family's factory, which chooses the real host
// pipeline or the simulated fallback for each worker, and the simulated fallback alone.
type entry struct {
	factory   Factory
	simulated Factory
}

// Registry maps the catalogue's MODEL_RUNNER names to the factories their families register.
type Registry struct {
	entries map[string]entry
}

// NewRegistry returns a registry without factories; each model family's Register adds its own
// (runners/families.NewRegistry adds every family's).
func NewRegistry() *Registry { return &Registry{entries: map[string]entry{}} }

// Register attaches the factories of a catalogued model: factory chooses the real pipeline or
// the simulated fallback for a worker, simulated is the fallback alone (what MODEL_RUNNER=mock
// runs for the model's service). A second registration replaces the first.
func (r *Registry) Register(name string, factory, simulated Factory) {
	r.entries[name] = entry{factory: factory, simulated: simulated}
}

// Names lists the registered runner names, sorted, with "mock" when a simulated runner is
// registered.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.entries)+1)
	mock := false
	for n, e := range r.entries {
		names = append(names, n)
		mock = mock || e.simulated != nil
	}
	if mock {
		names = append(names, catalogue.RunnerMock)
	}
	sort.Strings(names)
	return names
}

func (r *Registry) unknown(name string) error {
	return fmt.Errorf("%w %q (known: %s)", ErrUnknownRunner, name, strings.Join(r.Names(), ", "))
}

// Service tells which API family the named runner serves. "mock" has none of its own (""):
// like the Python server, it serves the family MODEL_SERVICE names, which callers resolve
// from the settings.
func (r *Registry) Service(name string) (Service, error) {
	if name == catalogue.RunnerMock && slices.Contains(r.Names(), catalogue.RunnerMock) {
		return "", nil
	}
	m, ok := Lookup(name, nil)
	if _, registered := r.entries[name]; !ok || !registered {
		return "", r.unknown(name)
	}
	return m.Service, nil
}

// New builds the named runner for one device group. "mock" builds the simulated runner of
// MODEL_SERVICE's default model.
func (r *Registry) New(name string, spec WorkerSpec) (Runner, error) {
	if name == catalogue.RunnerMock {
		service := ""
		if spec.Settings != nil {
			service = spec.Settings.ModelService
		}
		m, ok := Lookup(name, spec.Settings)
		e := r.entries[m.Name]
		if !ok || e.simulated == nil {
			return nil, fmt.Errorf("MODEL_RUNNER=mock needs MODEL_SERVICE=image|audio|cnn|video, got %q", service)
		}
		return e.simulated(spec)
	}
	e, ok := r.entries[name]
	if !ok {
		return nil, r.unknown(name)
	}
	return e.factory(spec)
}

// SimPipelineBlocker says why a runner's real host pipeline (Whisper, SDXL, SD3.5) cannot serve
// a worker on the simulator under these settings, or "" when it can (the SDXL and SD3.5
// factories decide DEVICE_BACKEND=metal before asking). It needs mock-device mode, model files
// in MODEL_WEIGHTS_PATH, and a device of their own: a worker process, a submesh of the shared parent mesh
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
