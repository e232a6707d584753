"""Fake of HEAD's audio response dataclasses (ours)."""

from dataclasses import dataclass
from typing import List, Optional


@dataclass
class AudioTextSegment:
    id: int
    speaker: str
    start_time: float
    end_time: float
    text: str


@dataclass
class AudioTextResponse:
    text: str
    duration: float
    segments: Optional[List[AudioTextSegment]] = None
    speaker_count: Optional[int] = None
    speakers: Optional[List[str]] = None
    start: Optional[float] = None
    end: Optional[float] = None


@dataclass
class AudioStreamChunk:
    text: str
    chunk_id: int
