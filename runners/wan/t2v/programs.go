package t2v

import (
	"embed"
	"io/fs"
)

//go:embed programs/*.ttbsim
var programFiles embed.FS

// Programs returns the simulator manifests of the full-size Wan2.2 T2V programs (832x480, 81
// frames, mesh 2x4; runners/programs declares them): the UMT5 encoder, the two experts and the
// VAE decoder, with TT's published latencies.
func Programs() fs.FS {
	sub, err := fs.Sub(programFiles, "programs")
	if err != nil {
		panic(err) // the embedded directory exists: a build error otherwise
	}
	return sub
}

// ProgramNames are the Wan2.2 T2V programs in load order: text encoder, high-noise expert,
// low-noise expert, VAE.
var ProgramNames = []string{"wan22-t2v-text-encoder", "wan22-t2v-transformer", "wan22-t2v-transformer-2", "wan22-t2v-vae"}
