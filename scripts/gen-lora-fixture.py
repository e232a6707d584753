#!/usr/bin/env python3
"""Writes a small synthetic SDXL LoRA (.safetensors, kohya-ss layout) with the standard library.

    scripts/gen-lora-fixture.py OUT.safetensors [--rank 4] [--seed 1] [--format kohya|peft]

The adapter touches six SDXL modules: two UNet self-attention projections, one cross-attention
key (context 2048), one feed-forward input (GEGLU, 8x the width), and one layer of each text
encoder. Factors are float16 (the up factors float32 in the PEFT layout), values from a seeded
random.Random, and kohya files carry an alpha (float32 scalar) per module. The file follows the
safetensors format: an 8-byte little-endian header length, the JSON header (tensor name ->
dtype, shape, data_offsets; __metadata__), then the tensors back to back.
"""
import argparse
import json
import random
import struct

MODULES = [  # (kohya name, diffusers/PEFT name, in, out)
    ("lora_unet_down_blocks_1_attentions_0_transformer_blocks_0_attn1_to_q",
     "unet.down_blocks.1.attentions.0.transformer_blocks.0.attn1.to_q", 640, 640),
    ("lora_unet_mid_block_attentions_0_transformer_blocks_3_attn1_to_out_0",
     "unet.mid_block.attentions.0.transformer_blocks.3.attn1.to_out.0", 1280, 1280),
    ("lora_unet_up_blocks_0_attentions_2_transformer_blocks_9_attn2_to_k",
     "unet.up_blocks.0.attentions.2.transformer_blocks.9.attn2.to_k", 2048, 1280),
    ("lora_unet_up_blocks_1_attentions_1_transformer_blocks_1_ff_net_0_proj",
     "unet.up_blocks.1.attentions.1.transformer_blocks.1.ff.net.0.proj", 640, 5120),
    ("lora_te1_text_model_encoder_layers_0_self_attn_q_proj",
     "text_encoder.text_model.encoder.layers.0.self_attn.q_proj", 768, 768),
    ("lora_te2_text_model_encoder_layers_31_mlp_fc2",
     "text_encoder_2.text_model.encoder.layers.31.mlp.fc2", 5120, 1280),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=["kohya", "peft"], default="kohya")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tensors = []  # (name, dtype, shape, bytes)
    for kohya, peft, fin, fout in MODULES:
        down = [rng.uniform(-0.05, 0.05) for _ in range(a.rank * fin)]
        up = [rng.uniform(-0.05, 0.05) for _ in range(fout * a.rank)]
        if a.format == "kohya":
            tensors.append((kohya + ".lora_down.weight", "F16", [a.rank, fin], struct.pack("<%de" % len(down), *down)))
            tensors.append((kohya + ".lora_up.weight", "F16", [fout, a.rank], struct.pack("<%de" % len(up), *up)))
            tensors.append((kohya + ".alpha", "F32", [], struct.pack("<f", a.rank / 2)))
        else:
            tensors.append((peft + ".lora_A.weight", "F16", [a.rank, fin], struct.pack("<%de" % len(down), *down)))
            tensors.append((peft + ".lora_B.weight", "F32", [fout, a.rank], struct.pack("<%df" % len(up), *up)))
    header, offset, data = {"__metadata__": {"format": "pt", "generator": "tt-media-server-go scripts/gen-lora-fixture.py"}}, 0, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)  # safetensors pads the header to 8 bytes with spaces
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr + data)


if __name__ == "__main__":
    main()
