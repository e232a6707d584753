// Package lora reads LoRA adapters for SDXL: a local .safetensors file under the configured
// root (LORA_ROOT; no path traversal, symlinks resolved, no network), parsed for real (header,
// tensor names, shapes, dtypes, byte ranges) and checked against SDXL's UNet and text-encoder
// modules (kohya-ss names lora_unet_*/lora_te1_*/lora_te2_* with lora_down/lora_up/alpha, or
// diffusers/PEFT names unet.*/text_encoder.*/text_encoder_2.* with lora_A/lora_B) and their
// ranks. The 8-byte header length and the header are read and validated first, within limits;
// the tensor data is read only afterwards, one tensor at a time, when the factors are streamed
// (never the whole file at once). Adapters are cached by file identity within a byte bound,
// concurrent loads of one file share one read, and a bad file's verdict is remembered for a
// while. The fusion into the weights is the device's (runners/diffusion/diffusionpipeline); this
// package gives it the factors.
package lora

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Errors of this package; every one is the client's (HTTP 400; ErrTooLarge 413).
var (
	// ErrDisabled: LORA_ROOT is not set.
	ErrDisabled = errors.New("LoRA is not enabled on this server: LORA_ROOT is not set")
	// ErrNotLocal: a URL or Hugging Face Hub id, or not a .safetensors file.
	ErrNotLocal = errors.New("only local .safetensors files under LORA_ROOT are supported (no Hugging Face Hub ids or URLs: the server has no network at run time)")
	// ErrOutside: the path leaves LORA_ROOT (.., an absolute path elsewhere, or a symlink).
	ErrOutside = errors.New("lora_path is outside LORA_ROOT")
	// ErrNotFound: no such file under LORA_ROOT.
	ErrNotFound = errors.New("lora_path: no such file under LORA_ROOT")
	// ErrInvalid: the file is not a valid safetensors file.
	ErrInvalid = errors.New("not a valid .safetensors file")
	// ErrMismatch: valid safetensors, but not a LoRA of SDXL's modules.
	ErrMismatch = errors.New("not a LoRA adapter of SDXL")
	// ErrTooLarge: the file is over LORA_MAX_FILE_BYTES.
	ErrTooLarge = errors.New("LoRA file too large")
)

// Limits on a LoRA file.
const (
	// DefaultMaxFileBytes is LORA_MAX_FILE_BYTES's default: the largest adapter file read
	// (SDXL LoRAs are tens to hundreds of MB).
	DefaultMaxFileBytes = 1 << 30
	// maxHeaderBytes bounds the JSON header. safetensors allows 100 MB; an SDXL LoRA's header
	// (at most a few thousand tensor entries and kohya-ss's training metadata) is well under
	// 1 MiB, so 16 MiB refuses no real adapter and keeps a hostile header's parse small.
	maxHeaderBytes = 16 << 20
)

var hubID = regexp.MustCompile(`^[A-Za-z0-9][\w.-]*/[\w.-]+$`)

// Resolve maps a request's lora_path to the real path of a regular file under root: relative
// paths are taken from root; the path, and the file after resolving symlinks, must stay inside
// root's real path. URLs, Hub ids and names not ending in .safetensors are ErrNotLocal.
func Resolve(root, p string) (string, error) {
	switch {
	case root == "":
		return "", ErrDisabled
	case p == "":
		return "", fmt.Errorf("%w: empty lora_path", ErrNotLocal)
	case strings.Contains(p, "://") || strings.HasPrefix(p, "hf:"):
		return "", fmt.Errorf("%w: %q", ErrNotLocal, p)
	case !strings.HasSuffix(strings.ToLower(p), ".safetensors"):
		if hubID.MatchString(p) {
			return "", fmt.Errorf("%w: %q looks like a Hub id", ErrNotLocal, p)
		}
		return "", fmt.Errorf("%w: %q is not a .safetensors file", ErrNotLocal, p)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: %q", ErrNotLocal, p)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("LORA_ROOT %q: %w", root, err)
	}
	cand := p
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(absRoot, cand)
	}
	cand = filepath.Clean(cand)
	if !inside(absRoot, cand) {
		return "", fmt.Errorf("%w: %q", ErrOutside, p)
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", fmt.Errorf("LORA_ROOT %q: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(cand)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: %q", ErrNotFound, p)
		}
		return "", fmt.Errorf("%w: %q: %v", ErrNotFound, p, err)
	}
	if !inside(realRoot, real) {
		return "", fmt.Errorf("%w: %q resolves to a file outside it", ErrOutside, p)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %q is not a regular file", ErrNotFound, p)
	}
	return real, nil
}

func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
