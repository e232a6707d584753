"""Image classification, detection and segmentation (HEAD's Forge and YOLOv4 runners) for
tt_worker.py: HEAD's ImageSearchRequest fields from the server's wire cnn jobs (the picture as
PNG bytes), and the runners' answers (ImageClassificationResult, Forge detector boxes and
segmenter masks, YOLOv4 detection lists) as the wire's cnn result (docs/WORKER-PROTOCOL.md).
"""

import io

from tt_worker_image import image_from_wire
from tt_worker_protocol import get


def request(job_id, r, blobs):
    """HEAD's ImageSearchRequest fields for a wire cnn job: ("cnn", fields, private)."""
    img = image_from_wire(r["image"], blobs).convert("RGB")
    png = io.BytesIO()
    img.save(png, format="PNG", compress_level=1)  # the runners open an encoded file
    fields = {
        "prompt": png.getvalue(),
        "top_k": r.get("top_k") or 3,
        "min_confidence": r.get("min_confidence", 0.0),
        "response_format": "json",
    }
    return "cnn", fields, {"_task_id": str(job_id)}


def percent(p):
    """A probability as HEAD's runners give it ("45.1234%", or a number) in [0, 1]."""
    if isinstance(p, str):
        s = p.strip()
        v = float(s.rstrip("%"))
        return v / 100 if s.endswith("%") or v > 1 else v
    v = float(p)
    return v / 100 if v > 1 else v


def yolov4_detections(resp):
    """HEAD's TTYolov4Runner._format_detections list ({bbox{x1,y1,x2,y2}, confidence, class_id,
    class_name}) as wire detections, best score first; None when resp is not one."""
    if not isinstance(resp, (list, tuple)) or not all(isinstance(d, dict) and "bbox" in d for d in resp):
        return None
    dets = []
    for d in resp:
        b = d["bbox"]
        dets.append({"label": str(d.get("class_name", "")), "index": int(d.get("class_id", -1)),
                     "score": float(d.get("confidence", 0.0)),
                     "box": [float(b["x1"]), float(b["y1"]), float(b["x2"]), float(b["y2"])]})
    dets.sort(key=lambda d: -d["score"])
    return dets


def mask_blob(output):
    """A Forge segmenter's output mask (rows of class indices) and mask_shape as (width,
    height, bytes)."""
    rows = [list(r) for r in output["mask"]]
    height, width = len(rows), len(rows[0]) if rows else 0
    shape = output.get("mask_shape")
    if shape is not None and [int(x) for x in shape][-2:] != [height, width]:
        raise TypeError(f"mask of {height}x{width} with mask_shape {list(shape)}")
    if height == 0 or width == 0 or any(len(r) != width for r in rows):
        raise TypeError("a ragged or empty mask")
    data = bytearray(width * height)
    for y, r in enumerate(rows):
        for x, k in enumerate(r):
            k = int(k)
            if not 0 <= k <= 255:
                raise TypeError(f"mask class {k} outside 0..255")
            data[y * width + x] = k
    return width, height, bytes(data)


def cnn_result(out, resp):
    """HEAD's CNN answers on the wire: a classifier's ImageClassificationResult (labels), a
    Forge detector's (YOLOX: output boxes and scores too), a Forge segmenter's (output mask and
    mask_shape), or YOLOv4's list of detections."""
    dets = yolov4_detections(resp)
    if dets is not None:
        return {"cnn": {"top": [], "detections": dets}}
    if isinstance(resp, (list, tuple)) and len(resp) == 1:
        resp = resp[0]
    if isinstance(resp, str):  # HEAD's verbose_json CSV: "label,prob,lbl1,p1,idx1,..."
        raise TypeError("a verbose_json classification string (the worker asks for json)")
    label = get(resp, "top1_class_label")
    output = get(resp, "output") or {}
    labels = list(get(output, "labels") or [])
    probs = list(get(output, "probabilities") or [])
    indices = list(get(output, "indices") or [])
    boxes = get(output, "boxes")
    if boxes is not None:
        scores = list(get(output, "scores") or [])
        dets = []
        for i, box in enumerate(boxes):
            if box is None:
                continue
            score = scores[i] if i < len(scores) and scores[i] is not None else (percent(probs[i]) if i < len(probs) else 0.0)
            dets.append({"label": str(labels[i]) if i < len(labels) else "", "index": int(indices[i]) if i < len(indices) else -1,
                         "score": float(score), "box": [float(v) for v in box]})
        return {"cnn": {"top": [], "detections": dets}}
    top = []
    if label is not None:
        idx = indices[labels.index(label)] if label in labels and labels.index(label) < len(indices) else -1
        top.append({"label": str(label), "index": int(idx), "probability": percent(get(resp, "top1_class_probability"))})
    for i, lbl in enumerate(labels):
        if top and i == 0 and str(lbl) == top[0]["label"]:
            continue
        top.append({"label": str(lbl), "index": int(indices[i]) if i < len(indices) else -1,
                    "probability": percent(probs[i]) if i < len(probs) else 0.0})
    if not top:
        raise TypeError(f"classification result of type {type(resp).__name__} without a class")
    result = {"top": top}
    if get(output, "mask") is not None:
        width, height, data = mask_blob(output)
        result["mask"] = {"width": width, "height": height, "class": out.blob(data)}
    return {"cnn": result}

