"""Transcription (HEAD's Whisper runners) for tt_worker.py: HEAD's AudioProcessingRequest fields
from the server's wire audio jobs (the samples as a float32 array), and the runner's
AudioTextResponse as the wire's transcript (docs/WORKER-PROTOCOL.md). Standard library only,
numpy when installed.
"""

import os
import sys

from tt_worker_protocol import ProtocolError, blob_at, get

# ISO-639-1 code -> whisper's language name, as the Go runners answer (runners/whisper/whispertokenizer).
WHISPER_LANGUAGES = {
    "en": "english", "zh": "chinese", "de": "german", "es": "spanish", "ru": "russian",
    "ko": "korean", "fr": "french", "ja": "japanese", "pt": "portuguese", "tr": "turkish",
    "pl": "polish", "ca": "catalan", "nl": "dutch", "ar": "arabic", "sv": "swedish",
    "it": "italian", "id": "indonesian", "hi": "hindi", "fi": "finnish", "vi": "vietnamese",
    "he": "hebrew", "uk": "ukrainian", "el": "greek", "ms": "malay", "cs": "czech",
    "ro": "romanian", "da": "danish", "hu": "hungarian", "ta": "tamil", "no": "norwegian",
    "th": "thai", "ur": "urdu", "hr": "croatian", "bg": "bulgarian", "lt": "lithuanian",
    "la": "latin", "mi": "maori", "ml": "malayalam", "cy": "welsh", "sk": "slovak", "te": "telugu",
    "fa": "persian", "lv": "latvian", "bn": "bengali", "sr": "serbian", "az": "azerbaijani",
    "sl": "slovenian", "kn": "kannada", "et": "estonian", "mk": "macedonian", "br": "breton",
    "eu": "basque", "is": "icelandic", "hy": "armenian", "ne": "nepali", "mn": "mongolian",
    "bs": "bosnian", "kk": "kazakh", "sq": "albanian", "sw": "swahili", "gl": "galician",
    "mr": "marathi", "pa": "punjabi", "si": "sinhala", "km": "khmer", "sn": "shona",
    "yo": "yoruba", "so": "somali", "af": "afrikaans", "oc": "occitan", "ka": "georgian",
    "be": "belarusian", "tg": "tajik", "sd": "sindhi", "gu": "gujarati", "am": "amharic",
    "yi": "yiddish", "lo": "lao", "uz": "uzbek", "fo": "faroese", "ht": "haitian creole",
    "ps": "pashto", "tk": "turkmen", "nn": "nynorsk", "mt": "maltese", "sa": "sanskrit",
    "lb": "luxembourgish", "my": "myanmar", "bo": "tibetan", "tl": "tagalog", "mg": "malagasy",
    "as": "assamese", "tt": "tatar", "haw": "hawaiian", "ln": "lingala", "ha": "hausa",
    "ba": "bashkir", "jw": "javanese", "su": "sundanese", "yue": "cantonese",
}


def request(job_id, r, blobs):
    """HEAD's AudioProcessingRequest fields and private attributes for a wire audio job:
    ("audio", fields, private)."""
    raw = blob_at(blobs, r["samples"])
    if len(raw) % 4:
        raise ProtocolError(f"{len(raw)} bytes of samples")
    try:
        import numpy

        samples = numpy.frombuffer(raw, dtype="<f4").astype(numpy.float32)
    except ImportError:
        import array

        samples = array.array("f", bytes(raw))
        if sys.byteorder != "little":
            samples.byteswap()
    segments = r.get("segments")
    fields = {
        "file": b"",
        "stream": bool(r.get("stream")),
        "response_format": "verbose_json",
        "is_preprocessing_enabled": segments is not None,
        "perform_diarization": False,
        "temperatures": r.get("temperature", 0.0),
        "prompt": r.get("prompt", ""),
    }
    temps = r.get("temperatures")
    if temps:  # HEAD's whole fallback schedule
        fields["temperatures"] = tuple(temps) if len(temps) > 1 else temps[0]
    for k in ("compression_ratio_threshold", "logprob_threshold", "no_speech_threshold"):
        if r.get(k) is not None:
            fields[k] = r[k]
    private = {
        "_task_id": str(job_id),
        "_audio_array": samples,
        "_duration": float(r.get("duration") or 0.0),
        "_segments": None if segments is None else [{"start": s["start"], "end": s["end"]} for s in segments],
    }
    return "audio", fields, private


def transcript_result(resp, wire_req):
    if isinstance(resp, (list, tuple)) and len(resp) == 1:
        resp = resp[0]
    if isinstance(resp, str):
        resp = {"text": resp}
    segments = get(resp, "segments")
    speakers = get(resp, "speakers")
    language = wire_req.get("language") or os.environ.get("AUDIO_LANGUAGE", "English")
    language = WHISPER_LANGUAGES.get(language.lower(), language.lower())
    return {"transcript": {
        "text": get(resp, "text") or "",
        "task": wire_req.get("task") or "transcribe",
        "language": language,
        "duration": float(get(resp, "duration") or wire_req.get("duration") or 0.0),
        "segments": None if segments is None else [{
            "id": int(get(s, "id", i)),
            "speaker": get(s, "speaker") or "",
            "start_time": float(get(s, "start_time", 0.0)),
            "end_time": float(get(s, "end_time", 0.0)),
            "text": get(s, "text") or "",
        } for i, s in enumerate(segments)],
        "speaker_count": int(get(resp, "speaker_count") or 0),
        "speakers": None if speakers is None else [str(s) for s in speakers],
    }}

