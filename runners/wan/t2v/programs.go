package t2v

import (
	"embed"
	"io/fs"
)

//go:embed programs/*.ttbsim
var programFiles embed.FS

// Programs returns the simulator manifests of the full-size Wan2.2 programs (runners/programs
// declares them): the UMT5 encoder, the two experts and the VAE decoder, with TT's published
// latencies — Prefix480's at 832x480 on a 2x4 mesh, Prefix720's at 1280x720 on a 4x8 Galaxy;
// 81 frames each — and the I2V sets (runners/wan/i2v's prefixes: 36-channel experts and a VAE
// encoder).
func Programs() fs.FS {
	sub, err := fs.Sub(programFiles, "programs")
	if err != nil {
		panic(err) // the embedded directory exists: a build error otherwise
	}
	return sub
}

// The program sets' name prefixes, and the 720p set's frame width.
const (
	Prefix480 = "wan22-t2v"
	Prefix720 = "wan22-t2v-720p"
	Width720  = 1280
)

// ProgramNames are a set's programs in load order: text encoder, high-noise expert, low-noise
// expert, VAE.
func ProgramNames(prefix string) []string {
	return []string{prefix + "-text-encoder", prefix + "-transformer", prefix + "-transformer-2", prefix + "-vae"}
}
