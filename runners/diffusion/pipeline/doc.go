// Package pipeline is the host-side text-to-image pipeline over device programs: diffusers'
// StableDiffusionXLPipeline (text-to-image, one image per request) with the text encoders,
// the UNet step and the VAE decoder behind a Device.
//
// Per request it tokenizes the prompts for both CLIP encoders, runs the encoders once over the
// classifier-free-guidance batch (negative and positive prompt), adds SDXL's micro-conditioning
// (original size, crop top-left, target size) and pooled text embeds, draws the initial
// latents from the seed as torch's CPU generator does, scales them by init_noise_sigma, runs
// the UNet exactly once per scheduler step (EulerDiscrete), combining the unconditional and
// conditional noise predictions with guidance_scale and guidance_rescale (diffusers'
// rescale_noise_cfg), then decodes the latents with the VAE once and maps its output to an
// RGB image. The context is checked at every step boundary; a progress callback sees each
// finished step.
//
// Device has two implementations: TTNNDevice (over the ttnn bridge, used with the
// simulator's program manifests, see Programs) and, in tests, a fake that records the calls.
package pipeline
