package ttnn

import (
	"embed"
	"io/fs"
)

//go:embed programs/*.ttbsim
var simPrograms embed.FS

// SimPrograms returns the simulator's program manifests shipped in programs/ (the files
// "<name>.ttbsim" at the root of the returned FS). LoadProgram takes a path, so a caller
// writes the manifests it needs to a directory first (possibly rewriting the "mesh" line
// for the mesh it opens). The FS is compiled into the binary and needs no cgo.
func SimPrograms() fs.FS {
	sub, err := fs.Sub(simPrograms, "programs")
	if err != nil { // cannot happen: the directory is embedded above
		return simPrograms
	}
	return sub
}
