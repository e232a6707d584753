package lora

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// peftPrefix maps diffusers/PEFT component prefixes to components.
var peftPrefix = []struct {
	prefix string
	c      Component
}{{"text_encoder_2.", TextEncoder2}, {"text_encoder.", TextEncoder}, {"unet.", UNet}}

// role splits a tensor name into its module key and role (down, up, alpha).
func role(tn string) (Module, string, bool) {
	for _, s := range []struct{ suffix, role string }{
		{".lora_down.weight", "down"}, {".lora_up.weight", "up"}, {".alpha", "alpha"},
	} {
		if base, ok := strings.CutSuffix(tn, s.suffix); ok {
			m, found := kohyaModules[base]
			return m, s.role, found
		}
	}
	for _, s := range []struct{ suffix, role string }{{".lora_A.weight", "down"}, {".lora_B.weight", "up"}} {
		base, ok := strings.CutSuffix(tn, s.suffix)
		if !ok {
			continue
		}
		for _, p := range peftPrefix {
			if rest, ok := strings.CutPrefix(base, p.prefix); ok {
				m, found := sdxlModules[string(p.c)+"."+rest]
				return m, s.role, found
			}
		}
		return Module{}, "", false
	}
	return Module{}, "", false
}

func (a *Adapter) layers(r io.ReaderAt, tensors map[string]Tensor, name string) error {
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMismatch, name, fmt.Sprintf(format, args...))
	}
	type parts struct {
		m                Module
		down, up, alpha  *Tensor
		downName, upName string
	}
	byKey := map[string]*parts{}
	for tn, t := range tensors {
		m, r, ok := role(tn)
		if !ok {
			return mismatch("tensor %q is not a LoRA factor of an SDXL UNet or text-encoder module (expected lora_unet_*/lora_te1_*/lora_te2_* .lora_down/.lora_up/.alpha, or unet.*/text_encoder.*/text_encoder_2.* .lora_A/.lora_B)", tn)
		}
		if t.DType != "F16" && t.DType != "BF16" && t.DType != "F32" {
			return mismatch("tensor %q is %s; LoRA factors must be F16, BF16 or F32", tn, t.DType)
		}
		key := string(m.Component) + "." + m.Name
		p := byKey[key]
		if p == nil {
			p = &parts{m: m}
			byKey[key] = p
		}
		switch r {
		case "down":
			if p.down != nil {
				return mismatch("module %s has two down factors (%q and %q)", key, p.downName, tn)
			}
			p.down, p.downName = &t, tn
		case "up":
			if p.up != nil {
				return mismatch("module %s has two up factors (%q and %q)", key, p.upName, tn)
			}
			p.up, p.upName = &t, tn
		default:
			p.alpha = &t
		}
	}
	for key, p := range byKey {
		if p.down == nil || p.up == nil {
			return mismatch("module %s lacks its %s factor", key, map[bool]string{true: "up", false: "down"}[p.down != nil])
		}
		d, u := p.down.Shape, p.up.Shape
		if len(d) != 2 || len(u) != 2 {
			return mismatch("module %s: factors %q %v and %q %v are not matrices (convolution LoRAs are not supported)", key, p.downName, d, p.upName, u)
		}
		rank := d[0]
		if rank < 1 || rank > min(p.m.In, p.m.Out) || d[1] != p.m.In || u[0] != p.m.Out || u[1] != rank {
			return mismatch("module %s is [%d out, %d in]: down %q is %v, up %q is %v (want [rank, %d] and [%d, rank], 1 <= rank <= %d)",
				key, p.m.Out, p.m.In, p.downName, d, p.upName, u, p.m.In, p.m.Out, min(p.m.In, p.m.Out))
		}
		l := Layer{Module: p.m, Rank: rank, Alpha: float32(rank), Down: *p.down, Up: *p.up}
		if p.alpha != nil {
			var v []float32
			if p.alpha.n <= 8 { // one number at most: read only then
				var buf []byte
				var err error
				if v, err = p.alpha.read(r, &buf); err != nil {
					return fmt.Errorf("%w: %s: module %s alpha: %v", ErrInvalid, name, key, err)
				}
			}
			if len(v) != 1 || !(v[0] > 0) || math.IsInf(float64(v[0]), 0) {
				return mismatch("module %s: alpha %v is not one positive number", key, v)
			}
			l.Alpha = v[0]
		}
		a.Layers = append(a.Layers, l)
		a.Values += rank * (p.m.In + p.m.Out)
	}
	slices.SortFunc(a.Layers, func(x, y Layer) int {
		return strings.Compare(string(x.Module.Component)+"."+x.Module.Name, string(y.Module.Component)+"."+y.Module.Name)
	})
	return nil
}

// floats converts a tensor's bytes of dtype to float32.
func floats(dtype string, data []byte) []float32 {
	switch dtype {
	case "F32":
		out := make([]float32, len(data)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		return out
	case "BF16":
		out := make([]float32, len(data)/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		}
		return out
	case "F16":
		out := make([]float32, len(data)/2)
		for i := range out {
			out[i] = half(binary.LittleEndian.Uint16(data[2*i:]))
		}
		return out
	}
	return nil
}

// half converts IEEE-754 binary16 to float32.
func half(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		return float32(math.Copysign(float64(frac)*math.Pow(2, -24), float64(int32(sign)>>31|1)))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}
