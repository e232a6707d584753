package video

import (
	"image"
	"image/draw"

	xdraw "golang.org/x/image/draw"

	"github.com/tenstorrent/tt-media-server-go/media/webp"
)

// stillQuality is the WebP quality of thumbnails and spritesheets.
const stillQuality = 85

// Thumbnail is the clip's first frame as WebP.
func Thumbnail(f Frames) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return webp.Encode(f.Frame(0), stillQuality)
}

// Spritesheet columns, rows and tile width: up to 10 evenly spaced frames, 5 a row, each 160
// pixels wide.
const (
	spriteCols  = 5
	spriteCount = 10
	spriteWidth = 160
)

// Spritesheet is a grid of up to ten evenly spaced frames, left to right then top to bottom,
// each scaled to 160 pixels wide, as WebP.
func Spritesheet(f Frames) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return spritesheet(len(f.Frames), f.Width, f.Height, func(i int) image.Image { return f.Frame(i) })
}

// spriteFrames are the indices of the frames a clip of n frames shows in its spritesheet.
func spriteFrames(n int) []int {
	k := min(spriteCount, n)
	idx := make([]int, k)
	for j := range idx {
		idx[j] = j * (n - 1) / max(1, k-1)
	}
	return idx
}

// spritesheet lays out the sprite frames of a clip of n frames of width×height; frame(i) is
// frame i.
func spritesheet(n, width, height int, frame func(i int) image.Image) ([]byte, error) {
	cols, rows, tw, th := SpriteGrid(n, width, height)
	sheet := image.NewNRGBA(image.Rect(0, 0, cols*tw, rows*th))
	draw.Draw(sheet, sheet.Bounds(), image.Black, image.Point{}, draw.Src)
	for k, i := range spriteFrames(n) {
		r := image.Rect((k%cols)*tw, (k/cols)*th, (k%cols+1)*tw, (k/cols+1)*th)
		xdraw.ApproxBiLinear.Scale(sheet, r, frame(i), image.Rect(0, 0, width, height), xdraw.Src, nil)
	}
	return webp.Encode(sheet, stillQuality)
}

// SpriteGrid is the spritesheet's layout for a clip of n frames: columns, rows, and the tile
// size for frames of width×height.
func SpriteGrid(n, width, height int) (cols, rows, tileW, tileH int) {
	n = min(spriteCount, n)
	tileW = min(spriteWidth, width)
	tileH = max(1, height*tileW/width)
	cols = min(spriteCols, n)
	rows = (n + cols - 1) / cols
	return cols, rows, tileW, tileH
}
