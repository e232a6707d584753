"""Text-to-speech for tt_worker.py: HEAD's TextToSpeechRequest fields from the server's wire
speech jobs, and the runner's answers as the wire's raw float32 samples
(docs/WORKER-PROTOCOL.md).

HEAD's TTSpeechT5Runner answers a TextToSpeechResponse whose `audio` is a base64 WAV
(soundfile's 16-bit PCM); it goes back to the server as float32 samples, which the server encodes
(every format) and streams. A runner may also answer samples (a numpy array, a list) or a
response whose `audio` is raw WAV bytes. Standard library only, numpy when installed.
"""

import base64
import io
import struct
import sys
import wave

from tt_worker_protocol import blob_at, get


def speech_fields(r, embedding):
    """HEAD's TextToSpeechRequest fields for a wire speech job. embedding: the x-vector's raw
    float32 bytes or None (HEAD's field takes base64 or raw bytes: raw, no base64)."""
    fields = {"text": r.get("text", ""), "response_format": "wav"}
    if r.get("speaker_id"):
        fields["speaker_id"] = r["speaker_id"]
    if embedding is not None:
        fields["speaker_embedding"] = bytes(embedding)
    return fields



def request(job_id, r, blobs):
    """HEAD's TextToSpeechRequest fields for a wire speech job: ("speech", fields, private)."""
    emb = r.get("speaker_embedding")
    fields = speech_fields(r, None if emb is None else blob_at(blobs, emb))
    return "speech", fields, {"_task_id": str(job_id)}


def _float32_bytes(values):
    """Mono float32 little-endian bytes of an array or a sequence of numbers."""
    try:
        import numpy

        a = numpy.asarray(values, dtype="<f4").reshape(-1)
        return a.tobytes()
    except ImportError:
        import array

        a = array.array("f", [float(v) for v in values])
        if sys.byteorder != "little":
            a.byteswap()
        return a.tobytes()


def wav_samples(data):
    """A WAV file's samples (integer PCM, any channel count: the first channel) as float32
    bytes, and its sample rate."""
    with wave.open(io.BytesIO(data), "rb") as w:
        width, channels, rate, n = w.getsampwidth(), w.getnchannels(), w.getframerate(), w.getnframes()
        raw = w.readframes(n)
    count = len(raw) // (width * channels)
    try:
        import numpy

        if width == 3:  # 24-bit: widen to 32
            b = numpy.frombuffer(raw, dtype=numpy.uint8).reshape(-1, 3)
            ints = (b[:, 0].astype(numpy.int32) | (b[:, 1].astype(numpy.int32) << 8) | (b[:, 2].astype(numpy.int32) << 16))
            ints = numpy.where(ints >= 1 << 23, ints - (1 << 24), ints)
            scale = float(1 << 23)
        else:
            dtype = {1: numpy.uint8, 2: "<i2", 4: "<i4"}[width]
            ints = numpy.frombuffer(raw, dtype=dtype).astype(numpy.int64)
            if width == 1:
                ints = ints - 128
            scale = float(1 << (8 * width - 1))
        mono = ints.reshape(-1, channels)[:, 0] / scale
        return mono.astype("<f4").tobytes(), rate
    except ImportError:
        out = []
        step = width * channels
        for i in range(count):
            frame = raw[i * step:i * step + width]
            if width == 1:
                v = (frame[0] - 128) / 128.0
            else:
                v = int.from_bytes(frame, "little", signed=True) / float(1 << (8 * width - 1))
            out.append(v)
        return struct.pack(f"<{len(out)}f", *out), rate


def speech_result(resp, request):
    """The wire speech result fields (samples as float32 bytes first) of a runner's answer."""
    if isinstance(resp, (list, tuple)) and len(resp) == 1 and not isinstance(resp[0], (int, float)):
        resp = resp[0]
    rate = int(get(resp, "sample_rate") or 16000) if not hasattr(resp, "shape") else 16000
    audio = get(resp, "audio") if not hasattr(resp, "shape") and not isinstance(resp, (list, tuple)) else None
    if audio is None and not hasattr(resp, "shape") and not isinstance(resp, (list, tuple)):
        raise TypeError(f"speech result of type {type(resp).__name__} without audio")
    if audio is None:  # samples themselves
        samples = _float32_bytes(resp)
    else:
        fmt = (get(resp, "format") or "wav").lower()
        if fmt != "wav":
            raise TypeError(f"speech result in format {fmt!r} (the worker asks for wav)")
        data = audio if isinstance(audio, (bytes, bytearray)) else base64.b64decode(audio, validate=True)
        samples, rate = wav_samples(bytes(data))
    obj = resp if not hasattr(resp, "shape") and not isinstance(resp, (list, tuple)) else None
    speaker = get(obj, "speaker_id") if obj is not None else None
    if speaker is None and not get(request, "speaker_embedding"):
        speaker = get(request, "speaker_id")
    fields = {"sample_rate": rate, "speaker_id": speaker or ""}
    # Usage (OpenAI's SSE `usage`): what the runner reports, else what SpeechT5 implies —
    # a decoder step per 512 samples (two mel frames of hop 256), and the encoder's input ids
    # (the runner's processor when it has one, else SpeechT5's character tokenizer: one id per
    # character plus </s>).
    fields["steps"] = int(get(obj, "steps") or 0) or max(1, -(-(len(samples) // 4) // 512))
    fields["tokens"] = int(get(obj, "tokens") or 0) or text_tokens(runner_processor, get(request, "text") or "")
    fields["chunks"] = int(get(obj, "chunks") or 0) or 1
    return samples, fields


runner_processor = None  # set by tt_worker.py: the hosted runner's `processor` (HEAD's SpeechT5Processor)


def text_tokens(processor, text):
    """The encoder input ids the text makes."""
    if processor is not None:
        try:
            return int(processor(text=text, return_tensors="pt")["input_ids"].shape[1])
        except Exception:  # noqa: BLE001 - an estimate must not fail the job
            pass
    return len(text) + 1


def speech_chunk_samples(chunk):
    """A streamed chunk of speech (a dict or object with `audio` WAV or `samples`) as float32
    bytes and its sample rate."""
    samples = get(chunk, "samples")
    if samples is not None:
        return _float32_bytes(samples), int(get(chunk, "sample_rate") or 16000)
    audio = get(chunk, "audio")
    if audio is None:
        raise TypeError(f"speech chunk of type {type(chunk).__name__} without audio")
    data = audio if isinstance(audio, (bytes, bytearray)) else base64.b64decode(audio, validate=True)
    return wav_samples(bytes(data))
