package i2v

import (
	"embed"
	"io/fs"
)

//go:embed programs/*.ttbsim
var programFiles embed.FS

// Programs returns the simulator manifests of the full-size Wan2.2 I2V program sets
// (runners/programs declares them): t2v's four (text encoder, the two experts taking 36
// channels, VAE decoder) and the VAE encoder (t2v.VAEEncoderName), which t2v.TTNNDevice loads
// as an I2V device. Prefix480 is 832x480 on a 2x4 mesh, Prefix720 1280x720 on a 4x8 Galaxy;
// 81 frames each; latencies from TT's published Wan2.2 figures (each manifest says which).
func Programs() fs.FS {
	sub, err := fs.Sub(programFiles, "programs")
	if err != nil {
		panic(err) // the embedded directory exists: a build error otherwise
	}
	return sub
}

// The program sets' name prefixes.
const (
	Prefix480 = "wan22-i2v"
	Prefix720 = "wan22-i2v-720p"
)
