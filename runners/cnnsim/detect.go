package cnnsim

import (
	"cmp"
	"image"
	"math"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// detectGrid is the longer side, in cells, of the grid a detection looks at.
const detectGrid = 64

// Coordinates says how a detector reports its boxes.
type Coordinates int

const (
	// Fractions of the image's width and height (YOLOv4's tt-metal post-processing).
	Fractions Coordinates = iota
	// Pixels of the original image (YOLOX's get_detections, boxes divided by the resize ratio).
	Pixels
)

// detectionClass maps a region's mean colour to a COCO class: a fixed table by hue sector
// and lightness, greys by lightness. It stands in for the detector's classifier head.
func detectionClass(c [3]float64) int {
	h, s, l := hsl(c)
	if s < 0.2 {
		return [3]int{2, 0, 62}[min(int(l*3), 2)] // car, person, tv
	}
	table := [12][2]int{ // [hue sector of 30°][dark, light]
		{2, 11}, {16, 49}, {9, 46}, {58, 50}, {19, 47}, {14, 33},
		{8, 39}, {5, 41}, {25, 73}, {15, 77}, {0, 26}, {17, 55},
	}
	light := 0
	if l >= 0.5 {
		light = 1
	}
	return table[int(h/30)%12][light]
}

// Detect is the simulated detector: the image's salient regions (regions) become boxes, best
// score first. A region's score grows with its contrast against the image and its size (0.25
// to 0.99); its class is detectionClass of its mean colour. It is a deterministic function of
// the image: the same image always gets the same boxes, a uniform image none.
func Detect(img image.Image, coords Coordinates) []runners.Detection {
	g := downsample(img, detectGrid, false)
	b := img.Bounds()
	sx, sy := 1/float64(g.w), 1/float64(g.h)
	if coords == Pixels {
		sx, sy = float64(b.Dx())/float64(g.w), float64(b.Dy())/float64(g.h)
	}
	n := float64(g.w * g.h)
	var out []runners.Detection
	for _, r := range regions(g, max(2, int(n/500))) {
		contrast := min(1, r.contrast/0.35)
		coverage := min(1, math.Sqrt(float64(r.cells)/(0.01*n)))
		cls := detectionClass(r.mean)
		out = append(out, runners.Detection{
			Label: cocoClasses[cls], Index: cls,
			Score: math.Round((0.25+0.74*contrast*coverage)*1e4) / 1e4,
			Box: [4]float64{float64(r.x0) * sx, float64(r.y0) * sy,
				float64(r.x1+1) * sx, float64(r.y1+1) * sy},
		})
	}
	slices.SortStableFunc(out, func(a, b runners.Detection) int { return cmp.Compare(b.Score, a.Score) })
	return out
}
