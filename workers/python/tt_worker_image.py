"""Image generation, image-to-image and edit for tt_worker.py: HEAD's request fields from the
server's wire image jobs (init image and mask as base64 PNGs, as HEAD's API carries them), and
the runner's pictures (PIL images or uint8 arrays) as the wire's raw rgb8/rgba8/gray8 blobs
(docs/WORKER-PROTOCOL.md). PIL when a job carries pictures.
"""

import io

from tt_worker_protocol import ProtocolError, blob_at


def pil():
    from PIL import Image

    return Image


def image_from_wire(w, blobs):
    fmt = w.get("format")
    mode = {"rgba8": "RGBA", "rgb8": "RGB", "gray8": "L"}.get(fmt)
    if mode is None:
        raise ProtocolError(f"image format {fmt!r}")
    return pil().frombytes(mode, (w["width"], w["height"]), bytes(blob_at(blobs, w["pixels"])))


def b64_png(img):
    import base64

    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return base64.b64encode(buf.getvalue()).decode()



def request(job_id, r, blobs):
    """HEAD's ImageGenerateRequest (ImageToImageRequest with an init image, ImageEditRequest
    with a mask too) fields for a wire image job: (request kind, fields, private)."""
    fields = {
        "prompt": r.get("prompt", ""),
        "negative_prompt": r.get("negative_prompt") or None,
        "prompt_2": r.get("prompt_2") or None,
        "negative_prompt_2": r.get("negative_prompt_2") or None,
        "seed": r.get("seed"),
        "guidance_rescale": r.get("guidance_rescale", 0.0),
        "crop_coords_top_left": tuple(r.get("crop_coords_top_left") or (0, 0)),
        "timesteps": r.get("timesteps"),
        "sigmas": r.get("sigmas"),
        "number_of_images": 1,
    }
    # 0 = not given (OpenAI's dialect has neither): the request class's default applies.
    if (r.get("num_inference_steps") or 0) > 0:
        fields["num_inference_steps"] = r["num_inference_steps"]
    if (r.get("guidance_scale") or 0) > 0:
        fields["guidance_scale"] = r["guidance_scale"]
    if r.get("lora_path"):
        fields["lora_path"] = r["lora_path"]
        if r.get("lora_scale") is not None:
            fields["lora_scale"] = r["lora_scale"]
    kind = "image"
    if r.get("init_image"):  # HEAD's image-to-image and edit requests carry base64 files
        kind = "image_to_image"
        fields["image"] = b64_png(image_from_wire(r["init_image"], blobs).convert("RGB"))
        if r.get("strength") is not None:
            fields["strength"] = r["strength"]
        if r.get("mask"):
            kind = "edit"
            fields["mask"] = b64_png(image_from_wire(r["mask"], blobs).convert("L"))
    return kind, fields, {"_task_id": str(job_id)}


def wire_image(out, img):
    if hasattr(img, "mode") and hasattr(img, "tobytes"):  # PIL
        if img.mode not in ("RGB", "RGBA", "L"):
            img = img.convert("RGB")
        fmt = {"RGB": "rgb8", "RGBA": "rgba8", "L": "gray8"}[img.mode]
        width, height = img.size
        data = img.tobytes()
    elif hasattr(img, "shape") and hasattr(img, "tobytes"):  # numpy HxW[xC] uint8
        shape = tuple(img.shape)
        channels = shape[2] if len(shape) == 3 else 1
        fmt = {1: "gray8", 3: "rgb8", 4: "rgba8"}.get(channels)
        if fmt is None or str(img.dtype) != "uint8":
            raise TypeError(f"image array of shape {shape} and dtype {img.dtype}")
        height, width = shape[0], shape[1]
        data = img.tobytes()
    else:
        raise TypeError(f"image result of type {type(img).__name__}")
    return {"width": width, "height": height, "format": fmt, "pixels": out.blob(data)}


def image_result(out, resp):
    images = resp if isinstance(resp, (list, tuple)) else [resp]
    return {"images": [wire_image(out, img) for img in images]}

