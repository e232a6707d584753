package runners

import (
	"fmt"
	"image"
)

// ServiceVideo is the video-generation API family (HEAD's MODEL_SERVICE=video): asynchronous
// jobs (jobs/), not request/response.
const ServiceVideo Service = "video"

// VideoRequest is a text-to-video or image-to-video request, validated by the server against
// the model's VideoSpec: Steps is what the model will run (forced steps applied), Seed is
// always set (drawn at random when the client sent none, and reported).
type VideoRequest struct {
	Prompt         string
	NegativePrompt string
	Steps          int
	Seed           int64
	// Images are the I2V conditioning frames (decoded RGB, any size: the runner resizes), at
	// distinct frame positions; empty for text-to-video.
	Images []VideoImage
	// Width, Height and Frames are the clip the model makes (the server resolves them from
	// the model's spec: MiniMax's aspect_ratio and duration_seconds, Wan's mesh).
	Width, Height, Frames int
}

// VideoImage is one I2V conditioning image and the frame it anchors.
type VideoImage struct {
	Image    image.Image
	FramePos int
}

// VideoResult is a generated clip: Frames[i] is Width×Height RGB24, shown at FPS.
type VideoResult struct {
	Width, Height, FPS int
	Frames             [][]byte
}

func (*VideoRequest) Service() Service { return ServiceVideo }
func (*VideoResult) Service() Service  { return ServiceVideo }

// Cost of a video job: its denoising steps.
func (r *VideoRequest) Cost() float64 { return float64(max(r.Steps, 1)) }

// VideoSpec is a video model's request policy and output (HEAD's config/constants.py and its
// runners): catalogued per model.
type VideoSpec struct {
	// I2V: the deployment needs image conditioning (text-only requests are refused).
	I2V bool
	// ForcedSteps, when > 0, is the number of steps the model always runs (Distill, Lightning,
	// AniSora), whatever num_inference_steps says.
	ForcedSteps int
	// FPS and Frames are the clip's rate and length (Frames 0: from duration_seconds).
	FPS    int
	Frames int
	// Width×Height is the clip's size on a small mesh; LargeWidth×LargeHeight on a
	// Galaxy-class mesh (32 chips or more), when set.
	Width, Height           int
	LargeWidth, LargeHeight int
	// AspectRatios and Durations (seconds) are MiniMax-H3's served working points; a model
	// without them refuses aspect_ratio and duration_seconds other than its own.
	AspectRatios    [][2]int
	DefaultAspect   [2]int
	Durations       []int
	DefaultDuration int
	// ShortSide is the short side of MiniMax's frames (768P).
	ShortSide int
}

// Size is the clip's width×height on a mesh of chips chips.
func (v VideoSpec) Size(chips int) (w, h int) {
	if chips >= LargeMeshChips && v.LargeWidth > 0 {
		return v.LargeWidth, v.LargeHeight
	}
	return v.Width, v.Height
}

// LargeMeshChips is HEAD's LARGE_MESH_SIZE_THRESHOLD: meshes of 32 chips and more are
// Galaxy-class (Wan2.2 renders 1280×720 there, 832×480 elsewhere).
const LargeMeshChips = 32

// AspectSize is MiniMax's frame size for an aspect ratio: the short side ShortSide, the long
// side in proportion, both rounded to multiples of 16.
func (v VideoSpec) AspectSize(a [2]int) (w, h int) {
	round := func(x float64) int { return max(16, int(x/16+0.5)*16) }
	if a[0] >= a[1] {
		return round(float64(v.ShortSide) * float64(a[0]) / float64(a[1])), v.ShortSide
	}
	return v.ShortSide, round(float64(v.ShortSide) * float64(a[1]) / float64(a[0]))
}

// DurationFrames is MiniMax's frame count for a duration: the smallest 17n+5 that lasts at
// least seconds at FPS (its VAE encodes 17-frame chunks; HEAD's align_num_frames).
func (v VideoSpec) DurationFrames(seconds int) int {
	want := seconds * v.FPS
	n := max(0, (want-5+16)/17)
	return 17*n + 5
}

// String names the spec's fixed output, for messages.
func (v VideoSpec) String() string {
	return fmt.Sprintf("%dx%d, %d frames at %d fps", v.Width, v.Height, v.Frames, v.FPS)
}
