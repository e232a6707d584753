// Package diffusionpipeline holds the host-side text-to-image pipelines over device programs: diffusers'
// StableDiffusionXLPipeline (Pipeline, over a Device), StableDiffusion3Pipeline
// (SD3Pipeline, over an SD3Device) and FluxPipeline (FluxPipeline, over a FluxDevice), text-to-image, one image per request, with the text
// encoders, the denoiser step and the VAE decoder behind the device interface.
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
// SD3.5 (SD3Pipeline) tokenizes the prompt for CLIP-L, CLIP-G and T5 (prompt_2 and prompt_3
// default to the prompt, negative_prompt_2/3 to negative_prompt; the negative prompt is
// encoded even when empty), runs the three encoders once, builds the joint prompt sequence
// (the CLIP states zero-padded to T5's width, then T5's 256 tokens) and the pooled
// projections, draws 16-channel latents from the seed, runs the MMDiT once per
// FlowMatchEulerDiscrete step (shift 3.0) with classifier-free guidance, and decodes
// latents/1.5305+0.0609 with the VAE.
//
// Flux.1 (FluxPipeline, over a FluxDevice; FLUX.1-dev and FLUX.1-schnell) tokenizes the prompt
// for CLIP-L (its pooled output only) and prompt_2 (default the prompt) for T5, runs both
// encoders once, draws 16-channel latents from the seed and packs them into 2x2-patch tokens
// with their image ids, makes FluxPipeline's schedule (sigmas linspace(1, 1/N, N), dev shifted
// by exp(mu) with mu from the image sequence length, schnell unshifted), runs the transformer
// once per step with timestep/1000 and — dev only — the embedded guidance scale (no
// classifier-free guidance), then unpacks and decodes latents/0.3611+0.1159 with the VAE.
//
// Hooks see every finished step with a lazily computed estimate of the final latents (for
// streamed previews). Each device interface has two implementations: one over the ttnn
// bridge (TTNNDevice, TTNNSD3Device, TTNNFluxDevice) with the simulator's program manifests
// (Programs, SD3Programs, FluxPrograms; the denoiser step captured once as a trace and replayed), and, in tests, a fake
// that records the calls.
package diffusionpipeline
