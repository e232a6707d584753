// Package diffusion groups the host-side, device-independent building blocks shared by the
// SDXL and SD3.5 runners. It holds no pipeline code of its own, only the family's public API for
// the server (api.go: inpainting masks, LoRA checks); each job lives in a subpackage:
//
//   - clip: CLIP's byte-level BPE tokenizer and the SDXL two-encoder 77-id inputs.
//   - samplers: diffusers' EulerDiscreteScheduler and FlowMatchEulerDiscreteScheduler maths.
//   - latents: initial latents from a seed, equal to torch's CPU generator (manual_seed + randn).
//   - pipeline: the SDXL and SD3.5 host pipelines over device programs (encoders once, the
//     denoiser N steps as a replayed trace, VAE once), with fake devices for tests and ones on
//     the ttnn simulator.
//   - t5: T5's Unigram sentencepiece tokenizer (SD3.5's third encoder).
//   - preview: cheap latent-to-RGB previews for streamed partial images.
//   - runner: the runners.Runner for tt-sdxl-trace and tt-sd3.5 over the pipelines, with the
//     mock image runner as the fallback when no model files are present.
package diffusion
