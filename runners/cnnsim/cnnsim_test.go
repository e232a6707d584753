package cnnsim

import (
	"image"
	"image/color"
	"image/draw"
	"testing"

	"github.com/stretchr/testify/require"
)

// picture is a w × h image of bg with the given rectangles painted over it.
func picture(w, h int, bg color.Color, rects map[image.Rectangle]color.Color) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(bg), image.Point{}, draw.Src)
	for r, c := range rects {
		draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
	}
	return img
}

var (
	white = color.RGBA{255, 255, 255, 255}
	red   = color.RGBA{220, 20, 20, 255}
	green = color.RGBA{20, 160, 40, 255}
)

// A detection's box is where the object is, in the detector's coordinates; separate objects
// are separate boxes; a uniform image has none; the same image gives the same boxes.
func TestDetect(t *testing.T) {
	one := picture(320, 240, white, map[image.Rectangle]color.Color{image.Rect(80, 60, 160, 120): red})
	two := picture(320, 240, white, map[image.Rectangle]color.Color{
		image.Rect(20, 20, 100, 100): red, image.Rect(200, 120, 300, 220): green})
	tests := []struct {
		name   string
		img    image.Image
		coords Coordinates
		boxes  [][4]float64
	}{
		{"pixels", one, Pixels, [][4]float64{{80, 60, 160, 120}}},
		{"fractions", one, Fractions, [][4]float64{{0.25, 0.25, 0.5, 0.5}}},
		{"two objects", two, Pixels, [][4]float64{{20, 20, 100, 100}, {200, 120, 300, 220}}},
		{"uniform", picture(64, 64, white, nil), Pixels, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dets := Detect(tt.img, tt.coords)
			require.Len(t, dets, len(tt.boxes))
			for i, d := range dets {
				for k := range 4 {
					require.InDelta(t, tt.boxes[i][k], d.Box[k], 0.02*max(1, tt.boxes[i][2]), "box %d: %v", i, d.Box)
				}
				require.Equal(t, cocoClasses[d.Index], d.Label)
				require.True(t, d.Score >= 0.25 && d.Score <= 0.99, "score %v", d.Score)
				if i > 0 {
					require.GreaterOrEqual(t, dets[i-1].Score, d.Score, "best score first")
				}
			}
			require.Equal(t, dets, Detect(tt.img, tt.coords), "deterministic")
		})
	}
	// Colour decides the class: the red and the green object are different classes.
	dets := Detect(two, Pixels)
	require.NotEqual(t, dets[0].Index, dets[1].Index)
}

// The mask is 224 × 224, each pixel's class follows its colour, and the class list ranks the
// classes by their share of the mask.
func TestSegment(t *testing.T) {
	// Top half blue (sky), bottom half dark grey (road) with a green quarter (vegetation).
	img := picture(448, 448, color.RGBA{40, 40, 40, 255}, map[image.Rectangle]color.Color{
		image.Rect(0, 0, 448, 224): color.RGBA{60, 120, 230, 255}, image.Rect(0, 224, 224, 448): green})
	m, top := Segment(img)
	require.Equal(t, [2]int{MaskSide, MaskSide}, [2]int{m.Width, m.Height})
	require.Len(t, m.Class, MaskSide*MaskSide)
	at := func(x, y int) string { return cityscapesClasses[m.Class[y*m.Width+x]] }
	require.Equal(t, "sky", at(100, 50))
	require.Equal(t, "vegetation", at(50, 200))
	require.Equal(t, "road", at(200, 200))
	require.Equal(t, []string{"sky", "road", "vegetation"}, []string{top[0].Label, top[1].Label, top[2].Label})
	require.InDelta(t, 0.5, top[0].Probability, 1e-9)
	require.InDelta(t, 0.25, top[1].Probability, 1e-9)
	m2, _ := Segment(img)
	require.Equal(t, m, m2, "deterministic")
	other, _ := Segment(picture(448, 448, red, nil))
	require.NotEqual(t, m.Class, other.Class, "the mask follows the image")
}
