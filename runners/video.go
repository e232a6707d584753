package runners

import (
	"image"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// ServiceVideo is the video-generation API family (HEAD's MODEL_SERVICE=video): asynchronous
// jobs (jobs/), not request/response.
const ServiceVideo = catalogue.ServiceVideo

// VideoSpec is a video model's request policy and output, catalogued per model.
type VideoSpec = catalogue.VideoSpec

// AudioTrack is a text-to-audio-video model's soundtrack shape (catalogue.AudioTrack).
type AudioTrack = catalogue.AudioTrack

// LargeMeshChips is HEAD's LARGE_MESH_SIZE_THRESHOLD (catalogue.LargeMeshChips).
const LargeMeshChips = catalogue.LargeMeshChips

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

// VideoResult is a generated clip: Frames[i] is Width×Height RGB24, shown at FPS; Audio is the
// soundtrack of a text-to-audio-video model (nil for the others).
//
// File, instead of Frames, is an MP4 the runner encoded itself (HEAD's self-encoding runners on
// the Python road: tt-ltx-2.3-distilled, the Prodia runners and MiniMax with export_in_runner),
// already checked to be a regular file its worker was allowed to write and moved out of the
// worker's reach (procrunner); FPS is the rate the model is catalogued at, Width, Height 0.
// Whoever receives it owns the file: it adopts it into the job store (jobs.Files.Adopt) or
// removes it.
type VideoResult struct {
	Width, Height, FPS int
	Frames             [][]byte
	Audio              *VideoAudio
	File               string
}

// VideoAudio is a clip's soundtrack: 16-bit PCM interleaved by channel, lasting as long as
// the frames.
type VideoAudio struct {
	SampleRate, Channels int
	Samples              []int16
}

// VideoProgress is a video task's streamed progress (through Task.Emit): Done of Total
// denoising steps; Done 0 is sent when a device takes the task.
type VideoProgress struct{ Done, Total int }

func (*VideoRequest) Service() Service { return ServiceVideo }
func (VideoProgress) Service() Service { return ServiceVideo }
func (*VideoResult) Service() Service  { return ServiceVideo }

// Cost of a video job: its denoising steps.
func (r *VideoRequest) Cost() float64 { return float64(max(r.Steps, 1)) }
