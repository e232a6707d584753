"""Fake of HEAD's AudioProcessingRequest (ours)."""

from domain.base_request import BaseRequest


class AudioProcessingRequest(BaseRequest):
    _fields = {
        "file": b"", "stream": False, "response_format": "verbose_json", "is_preprocessing_enabled": True,
        "perform_diarization": False, "temperatures": 0.0, "compression_ratio_threshold": 2.4,
        "logprob_threshold": -2.0, "no_speech_threshold": 0.6, "return_timestamps": False, "prompt": "",
    }

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._audio_array = None
        self._segments = None
        self._duration = 0.0
