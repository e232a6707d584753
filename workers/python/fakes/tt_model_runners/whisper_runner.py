"""Fake of HEAD's TTWhisperRunner (ours): transcripts that state the audio's length and levels,
MOCK_AUDIO_SECONDS_PER_SECOND of device time per second of audio; run() for whole results,
_run_async() yielding HEAD's streaming_chunk / final_result items."""

import asyncio
import math
import os

import tt_worker_hooks as hooks

from domain.audio_text_response import AudioStreamChunk, AudioTextResponse, AudioTextSegment
from tt_model_runners.fake_common import FakeRunner, seconds, trigger

SAMPLE_RATE = 16000


def describe(samples, start, end):
    lo = max(0, min(len(samples), int(math.floor(start * SAMPLE_RATE))))
    hi = max(lo, min(len(samples), int(math.ceil(end * SAMPLE_RATE))))
    piece = samples[lo:hi]
    try:
        import numpy

        a = numpy.abs(numpy.asarray(piece, dtype=numpy.float64))
        peak = float(a.max()) if len(a) else 0.0
        rms = float(math.sqrt((a * a).mean())) if len(a) else 0.0
    except ImportError:
        peak = max((abs(v) for v in piece), default=0.0)
        rms = math.sqrt(sum(v * v for v in piece) / len(piece)) if len(piece) else 0.0
    length = max(0.0, end - start)
    if peak == 0:
        return f"Python fake transcription of {length:.2f} seconds of silence."
    return (f"Python fake transcription of {length:.2f} seconds of audio, "
            f"peak {20 * math.log10(peak):.1f} dBFS, RMS {20 * math.log10(rms):.1f} dBFS.")


class TTWhisperRunner(FakeRunner):
    def pieces(self, request):
        duration = request._duration or len(request._audio_array) / SAMPLE_RATE
        segs = request._segments
        if segs:
            return [(s["start"], s["end"], s.get("speaker", f"SPEAKER_{i:02d}")) for i, s in enumerate(segs)]
        return [(0.0, duration, None)]

    def check(self, request):
        if request._audio_array is None or len(request._audio_array) == 0:
            raise ValueError("AudioProcessingError: empty audio")
        trigger(request.prompt)

    def run(self, requests):
        self.count_call()
        out = []
        for request in requests:
            self.check(request)
            texts, segments = [], []
            for i, (start, end, speaker) in enumerate(self.pieces(request)):
                self.sleep([request], (end - start) * seconds("MOCK_AUDIO_SECONDS_PER_SECOND"))
                text = describe(request._audio_array, start, end)
                texts.append(text)
                if speaker is not None:
                    segments.append(AudioTextSegment(id=i, speaker=speaker, start_time=start, end_time=end, text=text))
            speakers = sorted({s.speaker for s in segments})
            out.append(AudioTextResponse(text=" ".join(texts), duration=request._duration,
                                         segments=segments if request._segments else None,
                                         speaker_count=len(speakers) if request._segments else None,
                                         speakers=speakers if request._segments else None))
        return out

    async def _run_async(self, requests):
        request = requests[0]
        if not request.stream:
            return self.run(requests)
        self.count_call()
        self.check(request)
        return self._stream(request)

    async def _stream(self, request):
        chunk_id, texts, segments = 0, [], []
        for i, (start, end, speaker) in enumerate(self.pieces(request)):
            text = describe(request._audio_array, start, end)
            words = text.split()
            per_word = (end - start) * seconds("MOCK_AUDIO_SECONDS_PER_SECOND") / len(words)
            for w, word in enumerate(words):
                await asyncio.to_thread(self.sleep, [request], per_word)
                chunk_id += 1
                shown = f"[{speaker}] {word}" if (w == 0 and speaker) else word
                yield {"type": "streaming_chunk", "chunk": AudioStreamChunk(text=shown, chunk_id=chunk_id),
                       "task_id": request._task_id}
            texts.append(text)
            if speaker is not None:
                segments.append(AudioTextSegment(id=i, speaker=speaker, start_time=start, end_time=end, text=text))
        speakers = sorted({s.speaker for s in segments})
        result = AudioTextResponse(text=" ".join(texts), duration=request._duration,
                                   segments=segments if request._segments else None,
                                   speaker_count=len(speakers) if request._segments else None,
                                   speakers=speakers if request._segments else None)
        yield {"type": "final_result", "result": result, "task_id": request._task_id, "return": True}
