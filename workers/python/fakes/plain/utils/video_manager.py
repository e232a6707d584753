"""Fake of HEAD's utils.video_manager (ours): VideoManager's two exporters with the same
signatures, files and encoder settings (ffmpeg from PATH, rawvideo RGB24 on stdin, libx264 CRF
23 yuv420p, +faststart; the soundtrack through a temporary WAV, AAC 192k), written under
TT_VIDEO_OUTPUT_DIR (read at import, as HEAD does), for the plain road's self-encoding fakes.
"""

import os
import subprocess
import uuid
import wave
from pathlib import Path

import numpy as np

_VIDEO_OUTPUT_DIR = Path(os.environ.get("TT_VIDEO_OUTPUT_DIR", "/tmp/videos"))


def _uint8_frames(frames):
    a = np.asarray(frames)
    if a.ndim == 5:
        a = a[0]
    if a.dtype != np.uint8:
        a = np.clip(np.rint(a.astype(np.float32) * 255.0), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(a[..., :3])


class VideoManager:
    def export_to_mp4(self, frames, fps=16):
        _VIDEO_OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
        path = str(_VIDEO_OUTPUT_DIR / f"{uuid.uuid4()}.mp4")
        self._encode(_uint8_frames(frames), path, fps)
        return path

    def export_to_mp4_with_audio(self, frames, audio, sampling_rate, fps=16):
        _VIDEO_OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
        stem = uuid.uuid4()
        path = str(_VIDEO_OUTPUT_DIR / f"{stem}.mp4")
        silent = str(_VIDEO_OUTPUT_DIR / f"{stem}_silent.mp4")
        wav = str(_VIDEO_OUTPUT_DIR / f"{stem}.wav")
        try:
            self._encode(_uint8_frames(frames), silent, fps)
            samples = np.asarray(audio)
            pcm = (np.clip(samples.T, -1.0, 1.0) * 32767.0).astype("<i2")
            with wave.open(wav, "wb") as w:
                w.setnchannels(samples.shape[0])
                w.setsampwidth(2)
                w.setframerate(int(sampling_rate))
                w.writeframes(pcm.tobytes())
            subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", silent, "-i", wav, "-c:v", "copy", "-c:a", "aac",
                            "-b:a", "192k", "-shortest", "-movflags", "+faststart", path], check=True, timeout=600)
            return path
        finally:
            for p in (silent, wav):
                try:
                    os.remove(p)
                except OSError:
                    pass

    @staticmethod
    def _encode(frames, path, fps):
        n, h, w, _ = frames.shape
        subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{w}x{h}",
                        "-pix_fmt", "rgb24", "-r", str(fps), "-i", "-", "-c:v", "libx264", "-crf", "23", "-pix_fmt",
                        "yuv420p", "-preset", "ultrafast", "-movflags", "+faststart", path],
                       input=frames.tobytes(), check=True, timeout=600)
