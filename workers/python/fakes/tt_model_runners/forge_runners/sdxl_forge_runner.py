"""Fake of HEAD's SDXLForgeRunner (ours): the SDXL fake's pictures at tt-xla SDXL's 512x512, one
request per call."""

from tt_model_runners.dit_runners import TTSD35Runner


class SDXLForgeRunner(TTSD35Runner):
    size = 512
