package diffusion

// The family's public API for the layers above it (the HTTP server): what they may ask of the
// diffusion family — an inpainting mask read from an upload, the LoRA adapters checked before a
// request is queued — without importing its internals (imageproc/, lora/).

import (
	"image"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/imageproc"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/lora"
)

// MaskChannel reads an inpainting mask as one channel, white = repaint (alphaMarks: OpenAI's
// convention, the fully transparent pixels mark the area).
func MaskChannel(img image.Image, alphaMarks bool) (*image.Gray, error) {
	return imageproc.MaskChannel(img, alphaMarks)
}

// LoRACache holds the LoRA adapters checked so far (LORA_ROOT), by file identity.
type LoRACache = lora.Cache

// LoRAOptions configure a LoRACache.
type LoRAOptions = lora.Options

// NewLoRACache makes a LoRACache.
func NewLoRACache(o LoRAOptions) *LoRACache { return lora.NewCache(o) }

// ErrLoRATooLarge is a LoRA file over LORA_MAX_FILE_BYTES or the memory budget.
var ErrLoRATooLarge = lora.ErrTooLarge
