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
