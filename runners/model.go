package runners

import (
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Model is a catalogued model (runners/catalogue holds every fact of it); the functions below
// derive what a runner needs from it and the settings.
type Model = catalogue.Model

// Models lists the catalogue (catalogue.Models).
func Models() []Model { return catalogue.Models() }

// Lookup returns the catalogued model of a MODEL_RUNNER name; "mock" is the default model of
// the settings' MODEL_SERVICE (SDXL, Whisper, ResNet-50). ok is false for any other name.
func Lookup(name string, s *config.Settings) (Model, bool) {
	if name == catalogue.RunnerMock {
		if s == nil {
			return Model{}, false
		}
		return catalogue.DefaultFor(Service(strings.ToLower(s.Service())))
	}
	return catalogue.Lookup(name)
}

// DefaultGuidance is the guidance_scale an image request without one gets on runner: the
// model's; "mock" runs the image service's default model (SDXL).
func DefaultGuidance(runner string) float64 {
	if m, ok := catalogue.Resolve(runner, ServiceImage); ok {
		return m.Image.Guidance // 0: the model takes no guidance
	}
	d, _ := catalogue.DefaultFor(ServiceImage)
	return d.Image.Guidance
}

// Contract returns a program's declaration (runners/programs), which both backends check a
// loaded program against.
func Contract(p catalogue.Program) (ttnn.ProgramSpec, bool) { return programs.Lookup(p.Name) }

// TraceRegion is the trace region the model opens its device with: TRACE_REGION_SIZE when it
// was set (to a positive size), else the model's own.
func TraceRegion(m Model, s *config.Settings) uint64 {
	if s != nil && s.TraceRegionSizeSet && s.TraceRegionSize > 0 {
		return uint64(s.TraceRegionSize)
	}
	return m.Device.TraceRegionSize
}

// MockLatency is the MOCK_* setting of one unit of the model's work: MOCK_STEP_SECONDS per
// denoising step, MOCK_AUDIO_SECONDS_PER_SECOND per second of audio, MOCK_CNN_SECONDS per image.
func MockLatency(m Model, s *config.Settings) time.Duration {
	if s == nil {
		return 0
	}
	switch m.Service {
	case ServiceImage:
		return s.MockStepLatency
	case ServiceAudio:
		return s.MockAudioLatency
	case ServiceCNN:
		return s.MockImageLatency
	case ServiceVideo:
		return s.MockStepLatency
	case ServiceTextToSpeech:
		return s.MockSpeechStep
	}
	return 0
}
