package deploy

import (
	"context"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sim image's server is built as its Dockerfile stage builds it — with cgo, so its devices
// are the C simulator behind the device bridge's C ABI, not the no-cgo twin that fails every
// device call — and it must run on gcr.io/distroless/cc-debian12, which has glibc (libc, libm,
// the loader), libgcc and libstdc++, and nothing else.
func TestSimImageBinaryRunsOnDistrolessCC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server")
	}
	bin := filepath.Join(t.TempDir(), "tt-media-server")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/tt-media-server")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Contains(t, libs, "libc.so.6", "a cgo build (the C simulator) links glibc")
	distrolessCC := map[string]bool{"libc.so.6": true, "libm.so.6": true, "libpthread.so.0": true, "libdl.so.2": true,
		"librt.so.1": true, "ld-linux-x86-64.so.2": true, "ld-linux-aarch64.so.1": true, "libgcc_s.so.1": true, "libstdc++.so.6": true}
	for _, l := range libs {
		require.True(t, distrolessCC[l], "the sim server needs %s, which distroless/cc-debian12 does not have", l)
	}
}
