package simimage

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"image"
	"math"

	xdraw "golang.org/x/image/draw"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// imageWork is what an image-to-image or inpainting request adds to the simulation.
type imageWork struct {
	init     *image.RGBA // the input at the output size
	mask     *image.Gray // the mask at the output size (inpainting), white = repaint
	strength float64
	encodes  int // VAE encoder runs (inpainting also encodes the masked image)
}

// prepareImage checks the request's image inputs against the model the way the real pipeline
// does (tt-sdxl-image-to-image needs an image, tt-sdxl-edit an image and a mask of its size,
// the text-to-image models neither), cuts the steps by strength (diffusers' get_timesteps) and
// resizes the inputs; nil for a text-to-image request.
func (r *imageRunner) prepareImage(req *runners.ImageRequest, p *renderParams) (*imageWork, error) {
	img2img, edit := r.model == catalogue.RunnerSDXLImg2Img, r.model == catalogue.RunnerSDXLEdit
	switch {
	case !img2img && !edit:
		if req.InitImage != nil || req.Mask != nil {
			return nil, &simdev.BadRequest{Msg: fmt.Sprintf("%s generates from text; image and mask need MODEL_RUNNER=%s or %s",
				r.model, catalogue.RunnerSDXLImg2Img, catalogue.RunnerSDXLEdit)}
		}
		return nil, nil
	case req.InitImage == nil:
		return nil, &simdev.BadRequest{Msg: "image is required"}
	case edit && req.Mask == nil:
		return nil, &simdev.BadRequest{Msg: "mask is required for " + r.model}
	case img2img && req.Mask != nil:
		return nil, &simdev.BadRequest{Msg: "mask is for inpainting (MODEL_RUNNER=" + catalogue.RunnerSDXLEdit + ")"}
	case !(req.Strength >= 0 && req.Strength <= 1):
		return nil, &simdev.BadRequest{Msg: fmt.Sprintf("strength %v outside [0, 1]", req.Strength)}
	}
	kept := min(int(float64(p.steps)*req.Strength), p.steps)
	if kept < 1 {
		return nil, &simdev.BadRequest{Msg: fmt.Sprintf("strength %v of %d inference steps leaves %d denoising steps; raise strength or num_inference_steps",
			req.Strength, p.steps, kept)}
	}
	w := &imageWork{strength: req.Strength, encodes: 1}
	w.init = image.NewRGBA(image.Rect(0, 0, r.size, r.size))
	xdraw.CatmullRom.Scale(w.init, w.init.Rect, req.InitImage, req.InitImage.Bounds(), xdraw.Src, nil)
	if edit {
		ib, mb := req.InitImage.Bounds(), req.Mask.Bounds()
		if ib.Dx() != mb.Dx() || ib.Dy() != mb.Dy() {
			return nil, &simdev.BadRequest{Msg: fmt.Sprintf("mask is %dx%d, image %dx%d: they must be the same size", mb.Dx(), mb.Dy(), ib.Dx(), ib.Dy())}
		}
		w.mask = image.NewGray(w.init.Rect)
		xdraw.NearestNeighbor.Scale(w.mask, w.mask.Rect, req.Mask, mb, xdraw.Src, nil)
		if req.Strength < 1 {
			w.encodes = 2
		}
	}
	// The input image shapes the picture as the prompt does.
	h := sha256.New()
	h.Write(p.palette[:])
	h.Write(w.init.Pix)
	if w.mask != nil {
		h.Write(w.mask.Pix)
	}
	_ = binary.Write(h, binary.LittleEndian, math.Float64bits(req.Strength))
	p.detail ^= binary.LittleEndian.Uint64(h.Sum(nil))
	p.steps = kept
	return w, nil
}

// blend keeps (1 - strength) of the input image, and with a mask repaints only the white area.
func (w *imageWork) blend(out *image.RGBA) {
	s := w.strength
	for i := 0; i < len(out.Pix); i += 4 {
		keep := 1 - s
		if w.mask != nil && w.mask.Pix[i/4] < 128 {
			keep = 1
		}
		for c := range 3 {
			v := keep*float64(w.init.Pix[i+c]) + (1-keep)*float64(out.Pix[i+c])
			out.Pix[i+c] = uint8(math.Round(v))
		}
	}
}

// applyLoRA checks the request's adapter (the real parser, under LORA_ROOT) and marks the
// picture with it and its scale, as fused weights would change the image.
func (r *imageRunner) applyLoRA(ctx context.Context, req *runners.ImageRequest, p *renderParams) error {
	if req.LoRAPath == "" {
		return nil
	}
	if r.sd35 {
		return &simdev.BadRequest{Msg: "lora_path is supported by the SDXL runners only"}
	}
	if !(req.LoRAScale >= 0 && req.LoRAScale <= 2) {
		return &simdev.BadRequest{Msg: fmt.Sprintf("lora_scale %v outside [0, 2]", req.LoRAScale)}
	}
	a, err := r.loras.Load(ctx, r.loraRoot, req.LoRAPath)
	if err != nil {
		return &simdev.BadRequest{Msg: err.Error()}
	}
	h := sha256.New()
	h.Write(p.palette[:])
	_, _ = fmt.Fprintf(h, "%s@%v/%d", a.Path, req.LoRAScale, a.Values)
	p.detail ^= binary.LittleEndian.Uint64(h.Sum(nil))
	return nil
}

// encode spends the VAE encoder's device time (its latency is the decoder's: the same program).
func (r *imageRunner) encode(ctx context.Context, w *imageWork) error {
	for range w.encodes {
		if err := r.dev.Run(ctx, progVAE, 1, 0); err != nil {
			return fmt.Errorf("%s: VAE encode: %w", r.model, err)
		}
	}
	return nil
}
