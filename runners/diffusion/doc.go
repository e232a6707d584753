// Package diffusion groups the host-side, device-independent building blocks shared by the
// SDXL and SD3.5 runners. It holds no code of its own; each job lives in a subpackage:
//
//   - clip: CLIP's byte-level BPE tokenizer and the SDXL two-encoder 77-id inputs.
//   - schedulers: diffusers' EulerDiscreteScheduler and FlowMatchEulerDiscreteScheduler maths.
//   - latents: initial latents from a seed, equal to torch's CPU generator (manual_seed + randn).
//   - pipeline: the SDXL host pipeline over device programs (encoders once, UNet N steps as a
//     replayed trace, VAE once), with a fake device for tests and one on the ttnn simulator.
package diffusion
