"""Fake of HEAD's TTSpeechT5Runner (ours): like HEAD's, run() answers one TextToSpeechResponse per
call whose `audio` is a base64 WAV at 16 kHz (16-bit PCM, as soundfile writes it), for HEAD's
TextToSpeechRequest (text, speaker_id, speaker_embedding). The voice is deterministic: a tone
sequence that follows the text's characters, pitched by the speaker (an id of HEAD's CMU ARCTIC
table, speaker_0000..speaker_7930, default speaker_7306, or the client's 512-float x-vector), about
65 ms per character; MOCK_TTS_STEP_SECONDS of device time per decoder step (two 80-bin mel frames
of 256 samples)."""

import base64
import io
import math
import re
import struct
import wave
import zlib

from domain.text_to_speech_response import TextToSpeechResponse
from tt_model_runners.fake_common import FakeRunner, seconds, trigger

SAMPLE_RATE = 16000
DEFAULT_SPEAKER = "speaker_7306"
SPEAKERS = 7931  # rows of HEAD's CMU ARCTIC x-vector table
EMBEDDING_DIM = 512
SAMPLES_PER_STEP = 2 * 256


def speaker_pitch(request):
    """(speaker id used or None, base pitch in Hz) of the request's voice."""
    emb = getattr(request, "speaker_embedding", None)
    if emb:
        data = emb if isinstance(emb, (bytes, bytearray)) else base64.b64decode(emb)
        if len(data) != 4 * EMBEDDING_DIM:
            raise ValueError(f"speaker_embedding has {len(data) // 4} floats, not {EMBEDDING_DIM}")
        values = struct.unpack(f"<{EMBEDDING_DIM}f", data)
        if not all(math.isfinite(v) for v in values):
            raise ValueError("speaker_embedding has a value that is not finite")
        return None, 110.0 + (zlib.crc32(data) % 120)
    sid = getattr(request, "speaker_id", None) or DEFAULT_SPEAKER
    m = re.fullmatch(r"speaker_(\d{4})", sid)
    if m is None or int(m.group(1)) >= SPEAKERS:
        raise ValueError(f"unknown speaker_id {sid!r}")
    return sid, 110.0 + (int(m.group(1)) % 120)


def voice(text, pitch):
    """16-bit PCM samples: per character a 65 ms tone (silence for spaces)."""
    per = int(0.065 * SAMPLE_RATE)
    out = bytearray()
    phase = 0.0
    for ch in text:
        if ch.isspace():
            out += b"\0\0" * per
            continue
        f = pitch * (1.0 + (ord(ch) % 24) / 12.0)
        for i in range(per):
            env = math.sin(math.pi * i / per)
            phase += 2 * math.pi * f / SAMPLE_RATE
            out += struct.pack("<h", int(12000 * env * math.sin(phase)))
    return bytes(out)


def wav(pcm):
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm)
    return buf.getvalue()


class TTSpeechT5Runner(FakeRunner):
    def is_request_batchable(self, request, batch=None):
        return not batch  # HEAD's runner speaks the first request of a batch only

    def run(self, requests):
        self.count_call()
        request = requests[0]
        if not request.text or not request.text.strip():
            raise ValueError("Text cannot be empty")
        trigger(request.text)
        speaker_id, pitch = speaker_pitch(request)
        pcm = voice(request.text.strip(), pitch)
        steps = max(1, len(pcm) // 2 // SAMPLES_PER_STEP)
        self.sleep([request], steps * seconds("MOCK_TTS_STEP_SECONDS"))
        audio = base64.b64encode(wav(pcm)).decode()
        return [TextToSpeechResponse(audio=audio, duration=len(pcm) / 2 / SAMPLE_RATE, sample_rate=SAMPLE_RATE,
                                     format="wav", speaker_id=speaker_id)]
