package cnnsim

import (
	"cmp"
	"image"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// MaskSide is the side of the mask: HEAD's U-Net input, 224 × 224.
const MaskSide = 224

// segmentClass maps a colour to a Cityscapes class: greys by lightness (road, building,
// sidewalk, sky), colours by hue (red car, orange traffic sign, yellow traffic light, green
// vegetation or terrain, cyan fence, blue sky, purple road, magenta person). It stands in for
// the U-Net's per-pixel classifier.
func segmentClass(c [3]float64) uint8 {
	h, s, l := hsl(c)
	if s < 0.2 {
		return [4]uint8{0, 2, 1, 10}[min(int(l*4), 3)]
	}
	switch {
	case h < 20 || h >= 340:
		return 13
	case h < 50:
		return 7
	case h < 70:
		return 6
	case h < 170:
		if l < 0.6 {
			return 8
		}
		return 9
	case h < 200:
		return 4
	case h < 260:
		return 10
	case h < 300:
		return 0
	default:
		return 11
	}
}

// Segment is the simulated segmenter: the image averaged to MaskSide × MaskSide, each cell's
// colour mapped to a class (segmentClass), and the classes present ranked by their share of
// the mask, largest first (ties: lower class first), as Classifications whose Probability is
// the share. It is a deterministic function of the image.
func Segment(img image.Image) (*runners.Mask, []runners.Classification) {
	g := downsample(img, MaskSide, true)
	m := &runners.Mask{Width: g.w, Height: g.h, Class: make([]uint8, len(g.rgb)), Labels: cityscapesClasses}
	count := make([]int, len(cityscapesClasses))
	for i, c := range g.rgb {
		m.Class[i] = segmentClass(c)
		count[m.Class[i]]++
	}
	var top []runners.Classification
	for k, n := range count {
		if n > 0 {
			top = append(top, runners.Classification{Label: cityscapesClasses[k], Index: k,
				Probability: float64(n) / float64(len(m.Class))})
		}
	}
	slices.SortStableFunc(top, func(a, b runners.Classification) int { return cmp.Compare(b.Probability, a.Probability) })
	return m, top
}
