// Package families builds the one registry of every model family: the constructor the server,
// its device workers and the tests use. Each family registers its catalogued models
// (runners.Lookup) with a factory that chooses the real host pipeline or the family's simulated
// runner, and that simulated runner, which MODEL_RUNNER=mock runs.
package families

import (
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/cnnsim"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionrunner"
	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/speecht5runner"
	"github.com/tenstorrent/tt-media-server-go/runners/wan"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whisperrunner"
)

// NewRegistry returns the registry of every MODEL_RUNNER of the catalogue.
func NewRegistry() *runners.Registry {
	reg := runners.NewRegistry()
	diffusionrunner.Register(reg)
	whisperrunner.Register(reg)
	resnet.Register(reg)
	cnnsim.Register(reg)
	speecht5runner.Register(reg)
	wan.Register(reg)
	return reg
}
