package lora

import (
	"fmt"
	"slices"
	"strings"
)

// Component is the SDXL model an adapted module belongs to.
type Component string

// The SDXL components a LoRA may adapt.
const (
	UNet         Component = "unet"
	TextEncoder  Component = "text_encoder"   // CLIP ViT-L/14
	TextEncoder2 Component = "text_encoder_2" // OpenCLIP ViT-bigG/14
)

// Module is one linear layer of SDXL that a LoRA may adapt: its diffusers name (dotted, within
// its component) and its weight's [out, in] features.
type Module struct {
	Component Component
	Name      string
	In, Out   int
}

// sdxlModules maps every adaptable module's key (component + "." + diffusers name) to itself.
// The table is SDXL base's architecture (stabilityai/stable-diffusion-xl-base-1.0, and its
// inpainting fine-tune, which shares every attention layer): the UNet's transformer blocks
// (down_blocks.1 and up_blocks.1 at 640 channels with 2 blocks per attention, down_blocks.2,
// the mid block and up_blocks.0 at 1280 channels with 10; cross-attention context 2048), each
// attention's proj_in/proj_out, and both CLIP text encoders' self-attention and MLP layers
// (12 layers of 768, 32 of 1280).
var sdxlModules = buildModules()

func buildModules() map[string]Module {
	m := map[string]Module{}
	add := func(c Component, name string, in, out int) {
		m[string(c)+"."+name] = Module{Component: c, Name: name, In: in, Out: out}
	}
	type stage struct {
		prefix            string
		dim, attns, depth int
	}
	for _, s := range []stage{
		{"down_blocks.1", 640, 2, 2}, {"down_blocks.2", 1280, 2, 10}, {"mid_block", 1280, 1, 10},
		{"up_blocks.0", 1280, 3, 10}, {"up_blocks.1", 640, 3, 2},
	} {
		for a := range s.attns {
			at := fmt.Sprintf("%s.attentions.%d", s.prefix, a)
			add(UNet, at+".proj_in", s.dim, s.dim)
			add(UNet, at+".proj_out", s.dim, s.dim)
			for b := range s.depth {
				tb := fmt.Sprintf("%s.transformer_blocks.%d", at, b)
				for _, p := range []string{"attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "attn2.to_q", "attn2.to_out.0"} {
					add(UNet, tb+"."+p, s.dim, s.dim)
				}
				add(UNet, tb+".attn2.to_k", 2048, s.dim)
				add(UNet, tb+".attn2.to_v", 2048, s.dim)
				add(UNet, tb+".ff.net.0.proj", s.dim, 8*s.dim) // GEGLU: value and gate
				add(UNet, tb+".ff.net.2", 4*s.dim, s.dim)
			}
		}
	}
	for _, te := range []struct {
		c           Component
		layers, dim int
	}{{TextEncoder, 12, 768}, {TextEncoder2, 32, 1280}} {
		for l := range te.layers {
			p := fmt.Sprintf("text_model.encoder.layers.%d", l)
			for _, q := range []string{"q_proj", "k_proj", "v_proj", "out_proj"} {
				add(te.c, p+".self_attn."+q, te.dim, te.dim)
			}
			add(te.c, p+".mlp.fc1", te.dim, 4*te.dim)
			add(te.c, p+".mlp.fc2", 4*te.dim, te.dim)
		}
	}
	return m
}

// kohyaModules maps kohya-ss names (lora_unet_down_blocks_1_..., lora_te1_..., lora_te2_...)
// to the modules: the diffusers name with dots as underscores, after a component prefix.
var kohyaModules = func() map[string]Module {
	prefix := map[Component]string{UNet: "lora_unet_", TextEncoder: "lora_te1_", TextEncoder2: "lora_te2_"}
	k := make(map[string]Module, len(sdxlModules))
	for _, m := range sdxlModules {
		k[prefix[m.Component]+strings.ReplaceAll(m.Name, ".", "_")] = m
	}
	return k
}()

// Modules returns the number of adaptable SDXL modules (for documentation and tests).
func Modules() int { return len(sdxlModules) }

// AllModules returns every adaptable SDXL module, sorted by component and name (for tools that
// write adapters: scripts/bomblora).
func AllModules() []Module {
	out := make([]Module, 0, len(sdxlModules))
	for _, m := range sdxlModules {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Module) int {
		return strings.Compare(string(a.Component)+"."+a.Name, string(b.Component)+"."+b.Name)
	})
	return out
}
