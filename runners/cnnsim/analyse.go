package cnnsim

import (
	"image"
	"math"
)

// grid is an image averaged down to w × h cells of RGB in [0,1] (box filter: every source
// pixel counts once, in the cell its centre falls in).
type grid struct {
	w, h int
	rgb  [][3]float64
}

// downsample averages img into a grid whose longer side is at most side cells (the image's
// own size when smaller), keeping the aspect ratio; fixed, when true, makes it side × side.
func downsample(img image.Image, side int, fixed bool) grid {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	gw, gh := side, side
	if !fixed {
		if w >= h {
			gw, gh = min(side, w), max(1, min(side, w)*h/w)
		} else {
			gw, gh = max(1, min(side, h)*w/h), min(side, h)
		}
	}
	g := grid{w: gw, h: gh, rgb: make([][3]float64, gw*gh)}
	count := make([]float64, gw*gh)
	for y := range h {
		cy := y * gh / h
		for x := range w {
			cx := x * gw / w
			r, gr, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			c := &g.rgb[cy*gw+cx]
			c[0] += float64(r) / 0xffff
			c[1] += float64(gr) / 0xffff
			c[2] += float64(bl) / 0xffff
			count[cy*gw+cx]++
		}
	}
	for i := range g.rgb {
		if n := count[i]; n > 0 {
			g.rgb[i][0] /= n
			g.rgb[i][1] /= n
			g.rgb[i][2] /= n
		}
	}
	return g
}

// hsl is a colour's hue in degrees [0,360), saturation and lightness in [0,1].
func hsl(c [3]float64) (h, s, l float64) {
	hi, lo := max(c[0], c[1], c[2]), min(c[0], c[1], c[2])
	l = (hi + lo) / 2
	d := hi - lo
	if d == 0 {
		return 0, 0, l
	}
	s = d / (1 - math.Abs(2*l-1))
	switch hi {
	case c[0]:
		h = math.Mod((c[1]-c[2])/d, 6)
	case c[1]:
		h = (c[2]-c[0])/d + 2
	default:
		h = (c[0]-c[1])/d + 4
	}
	h *= 60
	if h < 0 {
		h += 360
	}
	return h, min(s, 1), l
}

// region is one connected group of salient cells.
type region struct {
	cells          int
	x0, y0, x1, y1 int        // cell extents, inclusive
	mean           [3]float64 // mean colour
	contrast       float64    // mean colour distance from the image's mean
}

// regions finds the salient parts of g: cells whose colour is far from the image's mean
// colour (further than the mean distance plus half its spread, and at least 0.08), grouped by
// 4-connectivity; groups of fewer than minCells cells are dropped. The order is the scan
// order of each region's first cell, so the result is a deterministic function of g.
func regions(g grid, minCells int) []region {
	n := len(g.rgb)
	var mu [3]float64
	for _, c := range g.rgb {
		mu[0] += c[0] / float64(n)
		mu[1] += c[1] / float64(n)
		mu[2] += c[2] / float64(n)
	}
	dist := make([]float64, n)
	var mean, sq float64
	for i, c := range g.rgb {
		dist[i] = math.Sqrt((c[0]-mu[0])*(c[0]-mu[0]) + (c[1]-mu[1])*(c[1]-mu[1]) + (c[2]-mu[2])*(c[2]-mu[2]))
		mean += dist[i] / float64(n)
		sq += dist[i] * dist[i] / float64(n)
	}
	threshold := max(0.08, mean+0.5*math.Sqrt(max(0, sq-mean*mean)))
	seen := make([]bool, n)
	var out []region
	stack := make([]int, 0, n)
	for start := range n {
		if seen[start] || dist[start] <= threshold {
			continue
		}
		r := region{x0: g.w, y0: g.h, x1: -1, y1: -1}
		seen[start] = true
		stack = append(stack[:0], start)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := i%g.w, i/g.w
			r.cells++
			r.x0, r.y0, r.x1, r.y1 = min(r.x0, x), min(r.y0, y), max(r.x1, x), max(r.y1, y)
			for k := range 3 {
				r.mean[k] += g.rgb[i][k]
			}
			r.contrast += dist[i]
			for _, j := range [4]int{i - g.w, i + g.w, i - 1, i + 1} {
				if j < 0 || j >= n || (j == i-1 && x == 0) || (j == i+1 && x == g.w-1) {
					continue
				}
				if !seen[j] && dist[j] > threshold {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		for k := range 3 {
			r.mean[k] /= float64(r.cells)
		}
		r.contrast /= float64(r.cells)
		if r.cells >= minCells {
			out = append(out, r)
		}
	}
	return out
}
