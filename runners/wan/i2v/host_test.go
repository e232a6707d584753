package i2v

import (
	"image"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaskPositions: HEAD's frame positions beyond diffusers' first and last image (tt-metal's
// WanPipelineI2V: 1 at each anchored frame, the first repeated four times, grouped by four):
// frame f lands in latent frame (f+3)/4, channel (f+3)%4.
func TestMaskPositions(t *testing.T) {
	for _, c := range []struct {
		name      string
		positions []int
		frames    int
		on        [][2]int // {channel, latent frame} that are 1
	}{
		{"first", []int{0}, 9, [][2]int{{0, 0}, {1, 0}, {2, 0}, {3, 0}}},
		{"middle", []int{5}, 9, [][2]int{{0, 2}}},
		{"first and last", []int{0, 8}, 9, [][2]int{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {3, 2}}},
		{"frame 40 of 81", []int{40}, 81, [][2]int{{3, 10}}},
		{"one frame", []int{0}, 1, [][2]int{{0, 0}, {1, 0}, {2, 0}, {3, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Mask(c.positions, c.frames, 2, 3)
			require.NoError(t, err)
			lf := (c.frames-1)/4 + 1
			want := make([]float32, 4*lf*6)
			for _, o := range c.on {
				for i := range 6 {
					want[(o[0]*lf+o[1])*6+i] = 1
				}
			}
			require.Equal(t, want, m)
		})
	}
}

// TestRefusals: every bad conditioning input is an ErrRequest naming image_prompts or num_frames.
func TestRefusals(t *testing.T) {
	img := make([]float32, 3*16*16)
	for _, c := range []struct {
		name string
		run  func() error
		msg  string
	}{
		{"no image", func() error { _, err := Mask(nil, 9, 2, 2); return err }, "at least one conditioning image"},
		{"twice", func() error { _, err := Mask([]int{3, 3}, 9, 2, 2); return err }, "frame_pos 3 is given twice"},
		{"past the end", func() error { _, err := Mask([]int{9}, 9, 2, 2); return err }, "frame_pos 9 is outside the clip's 9 frames (0 to 8)"},
		{"negative", func() error { _, err := VideoCondition([][]float32{img}, []int{-1}, 9, 16, 16); return err }, "frame_pos -1"},
		{"frames", func() error { _, err := Mask([]int{0}, 8, 2, 2); return err }, "num_frames 8"},
		{"image size", func() error { _, err := VideoCondition([][]float32{img[:10]}, []int{0}, 9, 16, 16); return err }, "image 0 has 10 values"},
		{"empty image", func() error { _, err := Preprocess(image.NewNRGBA(image.Rect(0, 0, 0, 0)), 16, 16); return err }, "an empty image"},
		{"condition", func() error { _, err := Condition(make([]float32, 4), make([]float32, 17)); return err }, "a mask of 4 values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			require.ErrorIs(t, err, ErrRequest)
			require.ErrorContains(t, err, c.msg)
		})
	}
}

// TestVideoConditionPlacesImages: each image's planes land at its frame, zeros elsewhere.
func TestVideoConditionPlacesImages(t *testing.T) {
	a, b := make([]float32, 3*2*2), make([]float32, 3*2*2)
	for i := range a {
		a[i], b[i] = float32(i+1), -float32(i+1)
	}
	v, err := VideoCondition([][]float32{a, b}, []int{0, 4}, 5, 2, 2)
	require.NoError(t, err)
	for c := range 3 {
		for f := range 5 {
			got := v[(c*5+f)*4 : (c*5+f+1)*4]
			switch f {
			case 0:
				require.Equal(t, a[c*4:(c+1)*4], got)
			case 4:
				require.Equal(t, b[c*4:(c+1)*4], got)
			default:
				require.Equal(t, make([]float32, 4), got)
			}
		}
	}
}
