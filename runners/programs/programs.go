// Package programs is the device-program contract of every model: each program a runner loads
// (its name, the mesh and batch it is compiled for, and every function's inputs and outputs with
// dtype, shape and layout) declared once. The catalogue (runners.Model.Programs) names them;
// both backends check a loaded program against its declaration (ttnn.ProgramSpec.Check): the
// simulator manifests (ttnn/programs, runners/diffusion/diffusionpipeline/programs) are verified against
// it by this package's tests, and the metal backend's .ttnn files — <MODEL_WEIGHTS_PATH>/<name>.ttnn,
// one file per program, all its functions inside (docs/DEVICE-PROGRAMS.md) — when a runner loads them.
package programs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func t(name string, dt ttnn.DType, l ttnn.Layout, shape ...int) ttnn.TensorSpec {
	return ttnn.TensorSpec{TensorDesc: ttnn.TensorDesc{Name: name, DType: dt, Shape: shape}, Layout: l, Placement: ttnn.DRAM}
}

func fn(name string, ins []ttnn.TensorSpec, outs ...ttnn.TensorSpec) ttnn.FunctionSpec {
	return ttnn.FunctionSpec{Name: name, Inputs: ins, Outputs: outs}
}

func in(ts ...ttnn.TensorSpec) []ttnn.TensorSpec { return ts }

const (
	bf16, f32, u32, i32 = ttnn.BF16, ttnn.F32, ttnn.U32, ttnn.I32
	tile, rm            = ttnn.Tile, ttnn.RowMajor
)

var (
	m11 = ttnn.MeshShape{Rows: 1, Cols: 1}
	m24 = ttnn.MeshShape{Rows: 2, Cols: 4}
	m48 = ttnn.MeshShape{Rows: 4, Cols: 8}
)

// whisperStep is the Whisper large-v3 decoder step of batch b: one token and position per row,
// one encoder-states input per row (batch 1: "encoder_hidden_states").
func whisperStep(b int) ttnn.ProgramSpec {
	name, ins := "whisper-decoder-step", in(t("input_ids", u32, rm, b, 1), t("position", u32, rm, b))
	if b > 1 {
		name = fmt.Sprintf("whisper-decoder-step-b%d", b)
		for r := range b {
			ins = append(ins, t(fmt.Sprintf("encoder_hidden_states_%d", r), bf16, tile, 1, 1500, 1280))
		}
	} else {
		ins = append(ins, t("encoder_hidden_states", bf16, tile, 1, 1500, 1280))
	}
	return ttnn.ProgramSpec{Name: name, Mesh: m11, Batch: b,
		Functions: []ttnn.FunctionSpec{fn("step", ins, t("logits", f32, rm, b, 1, 51866))}}
}

func sdxlUNet(name string, latentChannels int) ttnn.ProgramSpec {
	return ttnn.ProgramSpec{Name: name, Mesh: m11, Batch: 2, Functions: []ttnn.FunctionSpec{fn("forward",
		in(t("sample", bf16, tile, 2, latentChannels, 128, 128), t("timestep", f32, rm, 1),
			t("encoder_hidden_states", bf16, tile, 2, 77, 2048), t("text_embeds", bf16, tile, 2, 1280),
			t("time_ids", f32, rm, 2, 6), t("weights", u32, rm, 8)),
		t("noise_pred", bf16, tile, 2, 4, 128, 128))}}
}

// flux1 is a Flux.1 checkpoint's pipeline on a 2x4 mesh (T3K) at 1024x1024, batch 1 (no
// classifier-free guidance): CLIP-L (pooled output only), T5-XXL of t5Len tokens, the
// transformer step over the packed latents (4096 tokens of 64: 2x2 patches of 16x128x128) with
// the rotary position ids — and the embedded guidance scale when guidance — and the VAE.
func flux1(prefix string, t5Len int, guidance bool) []ttnn.ProgramSpec {
	ins := in(t("hidden_states", bf16, tile, 1, 4096, 64), t("timestep", f32, rm, 1))
	if guidance {
		ins = append(ins, t("guidance", f32, rm, 1))
	}
	ins = append(ins, t("pooled_projections", bf16, tile, 1, 768), t("encoder_hidden_states", bf16, tile, 1, t5Len, 4096),
		t("txt_ids", f32, rm, t5Len, 3), t("img_ids", f32, rm, 4096, 3))
	return []ttnn.ProgramSpec{
		{Name: prefix + "-text-encoder", Mesh: m24, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("encode", in(t("input_ids", i32, rm, 1, 77)), t("pooled_output", bf16, tile, 1, 768))}},
		{Name: prefix + "-text-encoder-2", Mesh: m24, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("encode", in(t("input_ids", i32, rm, 1, t5Len)), t("hidden_states", bf16, tile, 1, t5Len, 4096))}},
		{Name: prefix + "-transformer", Mesh: m24, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("forward", ins, t("sample", bf16, tile, 1, 4096, 64))}},
		{Name: prefix + "-vae", Mesh: m24, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("decode", in(t("latents", bf16, tile, 1, 16, 128, 128)), t("image", bf16, tile, 1, 3, 1024, 1024))}},
	}
}

// wan22T2V is Wan2.2-T2V-A14B's pipeline at batch 1 on mesh: the UMT5-XXL encoder over 512
// ids, the two 14B experts (high noise: "-transformer", low noise: "-transformer-2"), each run
// once per prompt per step (the conditional and the unconditional prediction are two runs),
// over the latents lat at one timestep, and the VAE decoder to video. "wan22-t2v" is 832x480
// on a 2x4 mesh (T3K; latents [1,16,21,60,104]), "wan22-t2v-720p" 1280x720 on a 4x8 Galaxy
// (latents [1,16,21,90,160]); 81 frames each.
func wan22T2V(prefix string, mesh ttnn.MeshShape, lat, video []int) []ttnn.ProgramSpec {
	return wan22(prefix, mesh, lat, video, 16)
}

// wan22I2V is Wan2.2-I2V-A14B's pipeline: wan22T2V's programs whose experts take 36 channels
// (the latents, then the 4-channel mask and the 16-channel encoded condition), and the VAE
// encoder of the conditioning video ("-vae-encoder", video to the latent distribution's mode).
// "wan22-i2v" is 832x480 on a 2x4 mesh, "wan22-i2v-720p" 1280x720 on a 4x8 Galaxy.
func wan22I2V(prefix string, mesh ttnn.MeshShape, lat, video []int) []ttnn.ProgramSpec {
	return append(wan22(prefix, mesh, lat, video, 36), ttnn.ProgramSpec{Name: prefix + "-vae-encoder", Mesh: mesh, Batch: 1,
		Functions: []ttnn.FunctionSpec{fn("encode", in(t("video", bf16, tile, video...)), t("latents", bf16, tile, lat...))}})
}

// wan22 is a Wan2.2 A14B program set whose experts take inCh channels.
func wan22(prefix string, mesh ttnn.MeshShape, lat, video []int, inCh int) []ttnn.ProgramSpec {
	hidden := append([]int{lat[0], inCh}, lat[2:]...)
	step := func(name string) ttnn.ProgramSpec {
		return ttnn.ProgramSpec{Name: name, Mesh: mesh, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("forward", in(t("hidden_states", bf16, tile, hidden...), t("timestep", f32, rm, 1),
				t("encoder_hidden_states", bf16, tile, 1, 512, 4096)), t("sample", bf16, tile, lat...))}}
	}
	return []ttnn.ProgramSpec{
		{Name: prefix + "-text-encoder", Mesh: mesh, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("encode", in(t("input_ids", i32, rm, 1, 512), t("attention_mask", i32, rm, 1, 512)),
				t("hidden_states", bf16, tile, 1, 512, 4096))}},
		step(prefix + "-transformer"),
		step(prefix + "-transformer-2"),
		{Name: prefix + "-vae", Mesh: mesh, Batch: 1, Functions: []ttnn.FunctionSpec{
			fn("decode", in(t("latents", bf16, tile, lat...)), t("video", bf16, tile, video...))}},
	}
}

var all = slices.Concat(base, flux1("flux1-dev", 512, true), flux1("flux1-schnell", 256, false),
	wan22T2V("wan22-t2v", m24, []int{1, 16, 21, 60, 104}, []int{1, 3, 81, 480, 832}),
	wan22T2V("wan22-t2v-720p", m48, []int{1, 16, 21, 90, 160}, []int{1, 3, 81, 720, 1280}),
	wan22I2V("wan22-i2v", m24, []int{1, 16, 21, 60, 104}, []int{1, 3, 81, 480, 832}),
	wan22I2V("wan22-i2v-720p", m48, []int{1, 16, 21, 90, 160}, []int{1, 3, 81, 720, 1280}))

var base = []ttnn.ProgramSpec{
	// ResNet-50 (tt-xla-resnet and the other CNN names): a device batch of 16 224x224 images.
	{Name: "resnet50", Mesh: m11, Batch: 16, Functions: []ttnn.FunctionSpec{
		fn("forward", in(t("pixel_values", bf16, tile, 16, 3, 224, 224)), t("logits", f32, rm, 16, 1000))}},
	// SDXL: CLIP-L and OpenCLIP-bigG text encoders (negative and positive prompt), the UNet step
	// (classifier-free guidance pair), the VAE decoder and encoder, the inpainting UNet, LoRA fuse.
	{Name: "sdxl-text-encoder", Mesh: m11, Batch: 2, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_ids", i32, rm, 2, 77)), t("hidden_states", bf16, tile, 2, 77, 768))}},
	{Name: "sdxl-text-encoder-2", Mesh: m11, Batch: 2, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_ids", i32, rm, 2, 77)), t("hidden_states", bf16, tile, 2, 77, 1280), t("text_embeds", bf16, tile, 2, 1280))}},
	sdxlUNet("sdxl-unet", 4),
	sdxlUNet("sdxl-inpaint-unet", 9),
	{Name: "sdxl-vae", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{
		fn("decode", in(t("latents", bf16, tile, 1, 4, 128, 128)), t("image", bf16, tile, 1, 3, 1024, 1024))}},
	{Name: "sdxl-vae-encoder", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("image", bf16, tile, 1, 3, 1024, 1024)), t("latent_dist", bf16, tile, 1, 8, 128, 128))}},
	{Name: "sdxl-lora-fuse", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{
		fn("fuse", in(t("weights", u32, rm, 8), t("lora", bf16, rm, 65536), t("scale", f32, rm, 1)), t("weights", u32, rm, 8))}},
	// SD3.5 Large on a 2x4 mesh (T3K): CLIP-L, CLIP-G and T5-XXL encoders, the MMDiT step, VAE.
	{Name: "sd35-text-encoder", Mesh: m24, Batch: 2, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_ids", i32, rm, 2, 77)), t("hidden_states", bf16, tile, 2, 77, 768), t("text_embeds", bf16, tile, 2, 768))}},
	{Name: "sd35-text-encoder-2", Mesh: m24, Batch: 2, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_ids", i32, rm, 2, 77)), t("hidden_states", bf16, tile, 2, 77, 1280), t("text_embeds", bf16, tile, 2, 1280))}},
	{Name: "sd35-text-encoder-3", Mesh: m24, Batch: 2, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_ids", i32, rm, 2, 256)), t("hidden_states", bf16, tile, 2, 256, 4096))}},
	{Name: "sd35-transformer", Mesh: m24, Batch: 2, Functions: []ttnn.FunctionSpec{
		fn("forward", in(t("hidden_states", bf16, tile, 2, 16, 128, 128), t("timestep", f32, rm, 1),
			t("encoder_hidden_states", bf16, tile, 2, 333, 4096), t("pooled_projections", bf16, tile, 2, 2048)),
			t("sample", bf16, tile, 2, 16, 128, 128))}},
	{Name: "sd35-vae", Mesh: m24, Batch: 1, Functions: []ttnn.FunctionSpec{
		fn("decode", in(t("latents", bf16, tile, 1, 16, 128, 128)), t("image", bf16, tile, 1, 3, 1024, 1024))}},
	// Whisper large-v3: the encoder (one 30 s window of 128 mel bins) and the decoder step at
	// batch 1, 2 and 4.
	{Name: "whisper-encoder", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_features", bf16, tile, 1, 128, 3000)), t("encoder_hidden_states", bf16, tile, 1, 1500, 1280))}},
	whisperStep(1), whisperStep(2), whisperStep(4),
	// SpeechT5 (tt-speecht5-tts): the text encoder of each padded length, the decoder step with
	// its KV caches on device, the postnet (two mel frames and two stop logits per step) and
	// the HiFi-GAN vocoder over one chunk's mel.
	speecht5Encoder(32), speecht5Encoder(64), speecht5Encoder(128), speecht5Encoder(160),
	speecht5Encoder(192), speecht5Encoder(256),
	{Name: "speecht5-decoder-step", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{fn("step",
		in(t("decoder_input", f32, tile, 1, 1, 80), t("position", u32, rm, 1),
			t("encoder_hidden_states", bf16, tile, 1, 256, 768), t("encoder_attention_mask", bf16, tile, 1, 1, 256),
			t("speaker_embedding", f32, rm, 1, 512)),
		t("decoder_hidden_states", f32, tile, 1, 1, 768))}},
	{Name: "speecht5-postnet", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{fn("postnet",
		in(t("decoder_hidden_states", f32, tile, 1, 1, 768)),
		t("mel_before", f32, tile, 1, 2, 80), t("mel_after", f32, tile, 1, 2, 80), t("stop_logits", f32, rm, 1, 2))}},
	{Name: "speecht5-vocoder", Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{fn("vocode",
		in(t("mel", f32, tile, 1, 1600, 80)), t("waveform", f32, rm, 1, 409600))}},
}

// speecht5Encoder is the SpeechT5 text encoder over n padded ids.
func speecht5Encoder(n int) ttnn.ProgramSpec {
	return ttnn.ProgramSpec{Name: fmt.Sprintf("speecht5-encoder-%d", n), Mesh: m11, Batch: 1, Functions: []ttnn.FunctionSpec{
		fn("encode", in(t("input_ids", u32, rm, 1, n), t("attention_mask", bf16, tile, 1, 1, n)),
			t("encoder_hidden_states", bf16, tile, 1, n, 768))}}
}

// Lookup returns the declaration of a program: a deep copy, which the caller may change.
func Lookup(name string) (ttnn.ProgramSpec, bool) {
	for _, p := range all {
		if p.Name == name {
			return clone(p), true
		}
	}
	return ttnn.ProgramSpec{}, false
}

func clone(p ttnn.ProgramSpec) ttnn.ProgramSpec {
	p.Functions = append([]ttnn.FunctionSpec(nil), p.Functions...)
	for i, f := range p.Functions {
		for _, ts := range []*[]ttnn.TensorSpec{&f.Inputs, &f.Outputs} {
			*ts = append([]ttnn.TensorSpec(nil), *ts...)
			for j := range *ts {
				(*ts)[j].Shape = append([]int(nil), (*ts)[j].Shape...)
			}
		}
		p.Functions[i] = f
	}
	return p
}

// All returns (copies of) every declared program, by name.
func All() []ttnn.ProgramSpec {
	out := make([]ttnn.ProgramSpec, len(all))
	for i, p := range all {
		out[i] = clone(p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MetalPath is where the metal backend finds a program: <MODEL_WEIGHTS_PATH>/<name>.ttnn.
func MetalPath(weights, name string) string { return filepath.Join(weights, name+".ttnn") }

// Load loads the declared program name from path onto dev and checks it against its
// declaration; a mismatch is one line naming the program, the function, the tensor and the
// difference (wrapping ttnn.ErrContract).
func Load(ctx context.Context, dev *ttnn.Device, name, path string) (*ttnn.Program, error) {
	spec, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("program %s: not declared in runners/programs", name)
	}
	p, err := dev.LoadProgram(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("program %s: load %s: %w", name, path, err)
	}
	if err := spec.Check(path, p.Functions()); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}
