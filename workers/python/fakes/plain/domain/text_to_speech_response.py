"""Fake of HEAD's TextToSpeechResponse (ours), for the plain road."""

from dataclasses import dataclass
from typing import Optional


@dataclass
class TextToSpeechResponse:
    audio: str
    duration: float
    sample_rate: int = 16000
    format: str = "wav"
    speaker_id: Optional[str] = None
