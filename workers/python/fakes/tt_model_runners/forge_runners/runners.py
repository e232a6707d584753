"""Fake of HEAD's Forge CNN runners (ours): ImageNet labels derived from the picture's mean
colour, 16 x MOCK_CNN_SECONDS of device time per call, HEAD's ImageClassificationResult."""

import base64
import io
import os

from PIL import Image

from domain.image_search_response import ImageClassificationResult
from tt_model_runners.fake_common import FakeRunner, seconds

_labels = None


def labels():
    global _labels
    if _labels is None:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "..", "..", "..", "runners", "imagenet", "imagenet_classes.txt")
        try:
            with open(path) as f:
                _labels = [line.strip() for line in f if line.strip()]
        except OSError:
            _labels = [f"class {i}" for i in range(1000)]
    return _labels


# The first COCO classes (YOLOX's and YOLOv4's label set), enough for the fake detectors.
COCO = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
        "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow"]

# Cityscapes' 19 classes, HEAD's U-Net's.
CITYSCAPES = ["road", "sidewalk", "building", "wall", "fence", "pole", "traffic light", "traffic sign", "vegetation",
              "terrain", "sky", "person", "rider", "car", "truck", "bus", "train", "motorcycle", "bicycle"]


def open_image(prompt):
    data = prompt if isinstance(prompt, bytes) else base64.b64decode(prompt.split(",")[-1])
    return Image.open(io.BytesIO(data)).convert("RGB")


def quadrant_detections(img, threshold=0.3):
    """The fake detector: each quadrant of the picture is a candidate box (pixels of the
    original image), its class from its mean colour, its score from its brightness; those at or
    over threshold, best score first, as (class_id, score, (x1, y1, x2, y2))."""
    w, h = img.size
    found = []
    for qy in range(2):
        for qx in range(2):
            box = (qx * w // 2, qy * h // 2, (qx + 1) * w // 2, (qy + 1) * h // 2)
            px = list(img.crop(box).resize((4, 4)).getdata())
            mean = [sum(p[c] for p in px) / len(px) for c in range(3)]
            score = round(0.3 + 0.69 * (mean[0] + mean[1] + mean[2]) / 765 * (0.5 + 0.5 * (qx + qy + 1) / 3), 4)
            cls = int(mean[0] * 3 + mean[1] * 5 + mean[2] * 7 + qx + 2 * qy) % len(COCO)
            if score >= threshold:
                found.append((cls, score, tuple(float(v) for v in box)))
    found.sort(key=lambda d: -d[1])
    return found


class ForgeRunner(FakeRunner):
    model = "resnet"

    def run(self, image_search_requests):
        self.count_call()
        if not image_search_requests:
            raise ValueError("Empty requests list provided")
        self.sleep(image_search_requests, 16 * seconds("MOCK_CNN_SECONDS"))
        return [self.classify(r) for r in image_search_requests]

    def classify(self, request):
        data = request.prompt if isinstance(request.prompt, bytes) else base64.b64decode(request.prompt)
        img = Image.open(io.BytesIO(data)).convert("RGB")
        small = img.resize((8, 8))
        px = list(small.getdata())
        mean = [sum(p[c] for p in px) / len(px) for c in range(3)]
        names = labels()
        base = int(mean[0] * 7 + mean[1] * 13 + mean[2] * 17 + len(self.model)) % len(names)
        k = int(request.top_k)
        ranked = [((base + 37 * i) % len(names), max(1.0, 61.0 + base % 30 - 17 * i)) for i in range(k)]
        kept = [(idx, p) for i, (idx, p) in enumerate(ranked) if i == 0 or p >= float(request.min_confidence)]
        top_idx, top_p = kept[0]
        return ImageClassificationResult(
            top1_class_label=names[top_idx],
            top1_class_probability=f"{top_p:.4f}%",
            output={"labels": [names[i] for i, _ in kept], "probabilities": [f"{p:.4f}%" for _, p in kept],
                    "indices": [i for i, _ in kept]},
        )


class ForgeResnetRunner(ForgeRunner):
    model = "resnet"


class ForgeVovnetRunner(ForgeRunner):
    model = "vovnet"


class ForgeMobilenetv2Runner(ForgeRunner):
    model = "mobilenetv2"


class ForgeEfficientnetRunner(ForgeRunner):
    model = "efficientnet"


class ForgeVitRunner(ForgeRunner):
    model = "vit"


class ForgeSegformerRunner(ForgeRunner):
    """HEAD's SegFormer loader is SegformerForImageClassification: ImageNet labels."""

    model = "segformer"


class ForgeYoloxNanoRunner(ForgeRunner):
    """HEAD's ForgeRunner for YOLOX: predictions with a box and a numeric score, formatted by
    _format_response (output boxes and scores beside labels, probabilities, indices)."""

    model = "yolox-nano"

    def classify(self, request):
        dets = quadrant_detections(open_image(request.prompt))
        preds = [{"label": COCO[c], "probability": s * 100, "index": c, "box": list(b), "score": s}
                 for c, s, b in dets[:int(request.top_k)]]
        top1_label, top1_p = COCO[dets[0][0]], f"{dets[0][1] * 100:.4f}%"
        preds = [p for p in preds if p["probability"] >= float(request.min_confidence)]
        output = {"labels": [p["label"] for p in preds], "probabilities": [f"{p['probability']:.4f}%" for p in preds],
                  "indices": [p["index"] for p in preds]}
        if any("box" in p for p in preds):
            output["boxes"] = [p.get("box") for p in preds]
            output["scores"] = [p.get("score") for p in preds]
        return ImageClassificationResult(top1_class_label=top1_label, top1_class_probability=top1_p, output=output)


class ForgeUnetRunner(ForgeRunner):
    """U-Net on Cityscapes: HEAD's ForgeUnetRunner has no answer of its own (its loader's
    output_postprocess takes no top_k); this fake answers the envelope the server writes for it,
    output mask (224 x 224 rows of class indices, from the picture's colours) and mask_shape,
    and the classes present ranked by their share of the mask."""

    model = "unet"
    side = 224

    def classify(self, request):
        img = open_image(request.prompt).resize((self.side, self.side), Image.NEAREST)
        px = list(img.getdata())
        classes = [(r // 32 * 5 + g // 32 * 3 + b // 32) % len(CITYSCAPES) for r, g, b in px]
        mask = [classes[y * self.side:(y + 1) * self.side] for y in range(self.side)]
        count = {}
        for k in classes:
            count[k] = count.get(k, 0) + 1
        ranked = sorted(count.items(), key=lambda kv: (-kv[1], kv[0]))[:int(request.top_k)]
        share = [(k, 100.0 * n / len(classes)) for k, n in ranked]
        kept = [(k, p) for i, (k, p) in enumerate(share) if i == 0 or p >= float(request.min_confidence)]
        return ImageClassificationResult(
            top1_class_label=CITYSCAPES[share[0][0]],
            top1_class_probability=f"{share[0][1]:.4f}%",
            output={"labels": [CITYSCAPES[k] for k, _ in kept], "probabilities": [f"{p:.4f}%" for _, p in kept],
                    "indices": [k for k, _ in kept], "mask": mask, "mask_shape": [self.side, self.side]},
        )
