"""Fake of HEAD's ImageGenerateRequest (ours): the same field names and bounds."""

from domain.base_request import BaseRequest


class ImageGenerateRequest(BaseRequest):
    _fields = {
        "prompt": "", "negative_prompt": None, "num_inference_steps": 20, "seed": None, "number_of_images": 1,
        "image_return_format": "JPEG", "image_quality": 85, "guidance_scale": 5.0, "prompt_2": None,
        "negative_prompt_2": None, "crop_coords_top_left": (0, 0), "guidance_rescale": 0.0, "timesteps": None,
        "sigmas": None, "lora_path": None, "lora_scale": 0.5,
    }

    def validate(self):
        if not 1.0 <= float(self.guidance_scale) <= 20.0:
            raise ValueError(f"guidance_scale {self.guidance_scale} is not in [1, 20]")
        if self.num_inference_steps is not None and not 4 <= int(self.num_inference_steps) <= 50:
            raise ValueError(f"num_inference_steps {self.num_inference_steps} is not in [4, 50]")
