package wan

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing/fstest"
)

// scaledPrograms is a program set's simulator manifests with every clip-sized tensor shrunk
// by scale in height and width (MOCK_VIDEO_SCALE in mock-device mode: the server asks for
// clips that much smaller, and the Go road's pipeline then computes at that size instead of
// rendering the full size and shrinking it): latent tensors [1,C,F,H,W] get H and W divided by
// scale, rounded up to even (the transformer's 2x2 patches), videos [1,3,F,H,W] eight times
// those. Frames, channels, text states and latencies are unchanged. Only manifests of prefix
// are read.
func scaledPrograms(set fs.FS, prefix string, scale int) (fs.FS, error) {
	out := fstest.MapFS{}
	ents, err := fs.ReadDir(set, ".")
	if err != nil {
		return nil, fmt.Errorf("wan2.2 programs: %w", err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix+"-") || !strings.HasSuffix(e.Name(), ".ttbsim") {
			continue
		}
		src, err := fs.ReadFile(set, e.Name())
		if err != nil {
			return nil, fmt.Errorf("wan2.2 programs: %w", err)
		}
		lines := strings.Split(string(src), "\n")
		for i, l := range lines {
			if f := strings.Fields(l); len(f) == 8 && (f[0] == "input" || f[0] == "output") {
				lines[i] = strings.Join(append(f[:6], shrink(f[6], f[4] == "3", scale), shrink(f[7], f[4] == "3", scale)), " ")
			}
		}
		out[e.Name()] = &fstest.MapFile{Data: []byte(strings.Join(lines, "\n")), Mode: 0o444}
	}
	return out, nil
}

// shrink is one spatial dimension of a latent (or, video, of a video: 8 latent pixels each)
// divided by scale and rounded up to even.
func shrink(dim string, video bool, scale int) string {
	n, err := strconv.Atoi(dim)
	if err != nil {
		return dim
	}
	if video {
		n /= 8
	}
	n = max(2, ((n+scale-1)/scale+1)/2*2)
	if video {
		n *= 8
	}
	return strconv.Itoa(n)
}
