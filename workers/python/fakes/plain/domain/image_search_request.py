"""Fake of HEAD's ImageSearchRequest (ours): prompt is an encoded image (bytes or base64)."""

import base64
import io

from domain.base_request import BaseRequest


class ImageSearchRequest(BaseRequest):
    _fields = {"prompt": b"", "top_k": 3, "response_format": "json", "min_confidence": 70.0}

    def validate(self):
        if int(self.top_k) < 1:
            raise ValueError("top_k must be >= 1")
        if not 0 <= float(self.min_confidence) <= 100:
            raise ValueError("min_confidence must be in [0, 100]")
        if self.response_format not in ("json", "verbose_json"):
            raise ValueError("response_format must be 'json' or 'verbose_json'")

    def get_pil_image(self):
        from PIL import Image

        data = self.prompt if isinstance(self.prompt, bytes) else base64.b64decode(self.prompt)
        return Image.open(io.BytesIO(data))
