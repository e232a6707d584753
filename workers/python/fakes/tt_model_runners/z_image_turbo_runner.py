"""Fake of HEAD's ZImageTurboRunner (ours): the SDXL fake's pictures at Z-Image-Turbo's 512x512,
one request per call."""

from tt_model_runners.dit_runners import TTSD35Runner


class ZImageTurboRunner(TTSD35Runner):
    size = 512
