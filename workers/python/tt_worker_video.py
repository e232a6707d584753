"""Text- and image-to-video for tt_worker.py: HEAD's VideoGenerateRequest (with images
VideoI2VGenerateRequest) fields from the server's wire video jobs, and the runner's answers as
the wire's video result (docs/WORKER-PROTOCOL.md).

HEAD's video runners (tt_model_runners/dit_runners.py) answer frames: a numpy array of
(batch, frames, H, W, C) or (frames, H, W, C), uint8 or float in [0, 1] (as HEAD's VideoManager
reads them), or a list of PIL images. They go back as one blob of RGB24 frames, never base64; the
server encodes the MP4. A runner that encodes the MP4 itself (HEAD's LTX-2.3, and the Prodia
and MiniMax runners with export_in_runner) answers its path: that goes back as the path. Standard
library only, numpy when the runner's answer is an array, PIL for I2V images.
"""

import os

from tt_worker_image import b64_png, image_from_wire


def video_fields(r, images):
    """HEAD's VideoGenerateRequest (or, with images, VideoI2VGenerateRequest) fields and our
    private hints for a wire video job. images: [(base64 PNG, frame_pos)]. The hints (_width,
    _height, _num_frames) are the clip the server expects; HEAD's runners make their model's
    own shape and the server takes whatever size comes back."""
    fields = {
        "prompt": r.get("prompt", ""),
        "negative_prompt": r.get("negative_prompt") or None,
        "num_inference_steps": r.get("num_inference_steps"),
        "seed": r.get("seed"),
    }
    if images:
        fields["image_prompts"] = [{"image": b64, "frame_pos": pos} for b64, pos in images]
    private = {"_width": int(r.get("width") or 0), "_height": int(r.get("height") or 0),
               "_num_frames": int(r.get("num_frames") or 0)}
    return ("video_i2v" if images else "video"), fields, private


def request(job_id, r, blobs):
    """The request kind (video or video_i2v), fields and private hints for a wire video job."""
    images = [(b64_png(image_from_wire(p["image"], blobs).convert("RGB")), int(p.get("frame_pos") or 0))
              for p in r.get("image_prompts") or []]
    kind, fields, private = video_fields(r, images)
    private["_task_id"] = str(job_id)
    return kind, fields, private


def video_fps(runner):
    """The clip's frame rate: the runner's own `fps` when it has one, else the model's as the
    server catalogues it (TT_VIDEO_FPS), else HEAD VideoManager's 16."""
    fps = getattr(runner, "fps", None)
    if fps:
        return int(fps)
    try:
        return int(os.environ.get("TT_VIDEO_FPS", "") or 16)
    except ValueError:
        return 16


def video_file(resp):
    """The absolute path of the MP4 a self-encoding runner answered ([path] or path: HEAD's
    TTLTX23DistilledRunner always, the Prodia runners and TTMiniMaxH3Runner with
    export_in_runner), or None for frames. The runner wrote it under TT_VIDEO_OUTPUT_DIR, which
    the server set to this worker's export directory; the server checks and takes it."""
    if isinstance(resp, (list, tuple)) and len(resp) == 1:
        resp = resp[0]
    if isinstance(resp, (str, os.PathLike)):
        path = os.fsdecode(resp)
        if not path:
            raise TypeError("the runner answered an empty video path")
        return os.path.abspath(path)
    return None


def video_frames(resp):
    """(RGB24 bytes of every frame back to back, width, height, frames) of a runner's answer."""
    if isinstance(resp, (list, tuple)) and resp and hasattr(resp[0], "mode") and hasattr(resp[0], "tobytes"):
        frames = [f if f.mode == "RGB" else f.convert("RGB") for f in resp]
        w, h = frames[0].size
        for i, f in enumerate(frames):
            if f.size != (w, h):
                raise TypeError(f"frame {i} is {f.size[0]}x{f.size[1]}, frame 0 {w}x{h}")
        return b"".join(f.tobytes() for f in frames), w, h, len(frames)
    import numpy

    if hasattr(resp, "cpu") and hasattr(resp, "numpy"):  # a torch tensor
        resp = resp.cpu().numpy()
    if isinstance(resp, (list, tuple)) and len(resp) == 1 and not hasattr(resp[0], "mode"):
        resp = resp[0]
    a = numpy.asarray(resp)
    if a.ndim == 5:
        if a.shape[0] != 1:
            raise TypeError(f"a batch of {a.shape[0]} videos for one request")
        a = a[0]
    if a.ndim != 4:
        raise TypeError(f"video frames of shape {a.shape} (want frames×H×W×C)")
    n, h, w, c = a.shape
    if c == 4:
        a = a[..., :3]
    elif c == 1:
        a = numpy.repeat(a, 3, axis=3)
    elif c != 3:
        raise TypeError(f"video frames with {c} channels")
    if a.dtype != numpy.uint8:  # HEAD VideoManager's rule: float in [0, 1] scales by 255
        f = a.astype(numpy.float32)
        if f.size and float(f.max()) <= 1.0:
            f = f * 255.0
        a = numpy.clip(numpy.rint(f), 0, 255).astype(numpy.uint8)
    return numpy.ascontiguousarray(a).tobytes(), int(w), int(h), int(n)
