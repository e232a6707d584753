#!/usr/bin/python3
"""tt-media-server Python worker: hosts one model runner with tt-media-server HEAD's
BaseDeviceRunner interface (set_device, warmup, run, health_check, close_device,
is_request_batchable) behind the server's worker protocol (docs/WORKER-PROTOCOL.md).

    python3 tt_worker.py GROUP RUNNER

The Go server starts it, one process per device group, when DEVICE_BACKEND=python (or a
MODEL_POOLS entry says @python); it is not meant to be run by hand. GROUP is the device group as
written in DEVICE_IDS ("0", "0,1"); RUNNER a MODEL_RUNNER name, mapped to HEAD's runner class
(RUNNERS below) or to PYTHON_RUNNER_CLASS=module:Class. PYTHON_RUNNER_PATH (os.pathsep-separated)
goes in front of sys.path: on a Tenstorrent host, tt-inference-server's tt-media-server
directory (its tt_model_runners, domain, config and utils packages), with tt-metal's Python
environment (ttnn) as the interpreter (PYTHON_EXECUTABLE).

Our requests become the runner's request objects (HEAD's domain classes when importable, else
plain objects with the same attributes); its results (PIL images, AudioTextResponse objects,
image-classification results) become ours. The protocol's stdout belongs to this program: fd 1
is pointed at stderr, so prints and C libraries' output land in the server's log.

Threads and processes: the main thread reads the server's messages (cancel and chunk_ack arrive
while the runner computes); one runner thread runs warm-up and batches in order; heartbeats come
from a forked helper process, so a runner that holds the GIL inside a long C call cannot starve
them (the helper stops beating only when this process is stopped, e.g. SIGSTOP, or gone).
Modules beside this file, one per concern: tt_worker_protocol (frames, heartbeats, errors),
tt_worker_image, tt_worker_audio, tt_worker_cnn, tt_worker_tts and tt_worker_video (each service's
request fields and answers), tt_worker_hooks (what a hosted runner may call).
Standard library only; numpy and PIL are used when the hosted runner has them.
"""

import asyncio
import faulthandler
import importlib
import inspect
import logging
import os
import queue
import signal
import sys
import threading
import time
import traceback
import types

# MODEL_RUNNER -> (module, class) of tt-media-server HEAD's runner_fabric.
RUNNERS = {
    "tt-sdxl-trace": ("tt_model_runners.sdxl_generate_runner_trace", "TTSDXLGenerateRunnerTrace"),
    "tt-sdxl-image-to-image": ("tt_model_runners.sdxl_image_to_image_runner_trace", "TTSDXLImageToImageRunner"),
    "tt-sdxl-edit": ("tt_model_runners.sdxl_edit_runner_trace", "TTSDXLEditRunner"),
    "tt-sd3.5": ("tt_model_runners.dit_runners", "TTSD35Runner"),
    "tt-whisper": ("tt_model_runners.whisper_runner", "TTWhisperRunner"),
    "tt-xla-resnet": ("tt_model_runners.forge_runners.runners", "ForgeResnetRunner"),
    "tt-xla-vovnet": ("tt_model_runners.forge_runners.runners", "ForgeVovnetRunner"),
    "tt-xla-mobilenetv2": ("tt_model_runners.forge_runners.runners", "ForgeMobilenetv2Runner"),
    "tt-xla-efficientnet": ("tt_model_runners.forge_runners.runners", "ForgeEfficientnetRunner"),
    "tt-xla-vit": ("tt_model_runners.forge_runners.runners", "ForgeVitRunner"),
    "tt-xla-segformer": ("tt_model_runners.forge_runners.runners", "ForgeSegformerRunner"),
    "tt-xla-unet": ("tt_model_runners.forge_runners.runners", "ForgeUnetRunner"),
    "tt-xla-yolox-nano": ("tt_model_runners.forge_runners.runners", "ForgeYoloxNanoRunner"),
    "tt-xla-sdxl": ("tt_model_runners.forge_runners.sdxl_forge_runner", "SDXLForgeRunner"),
    "tt-yolov4": ("tt_model_runners.yolov4_runner", "TTYolov4Runner"),
    "tt-flux.1-dev": ("tt_model_runners.dit_runners", "TTFlux1Runner"),
    "tt-flux.1-schnell": ("tt_model_runners.dit_runners", "TTFlux1Runner"),
    "tt-motif-image-6b-preview": ("tt_model_runners.dit_runners", "TTMotifImage6BPreviewRunner"),
    "tt-qwen-image": ("tt_model_runners.dit_runners", "TTQwenImageRunner"),
    "tt-qwen-image-2512": ("tt_model_runners.dit_runners", "TTQwenImageRunner"),
    "tt-z-image-turbo": ("tt_model_runners.z_image_turbo_runner", "ZImageTurboRunner"),
    "tt-speecht5-tts": ("tt_model_runners.speecht5_runner", "TTSpeechT5Runner"),
    "tt-wan2.2": ("tt_model_runners.dit_runners", "TTWan22Runner"),
    "tt-wan2.2-t2v-prodia": ("tt_model_runners.dit_runners", "TTWan22T2VProdiaRunner"),
    "tt-wan2.2-i2v": ("tt_model_runners.dit_runners", "TTWan22I2VRunner"),
    "tt-wan2.2-i2v-prodia": ("tt_model_runners.dit_runners", "TTWan22I2VProdiaRunner"),
    "tt-wan2.2-i2v-anisora": ("tt_model_runners.dit_runners", "TTWan22I2VAniSoraRunner"),
    "tt-wan2.2-i2v-distill": ("tt_model_runners.dit_runners", "TTWan22I2VDistillRunner"),
    "tt-wan2.2-i2v-lora": ("tt_model_runners.dit_runners", "TTWan22I2VLoRARunner"),
    "tt-wan2.2-i2v-lightning": ("tt_model_runners.dit_runners", "TTWan22I2VLightningRunner"),
    "tt-mochi-1": ("tt_model_runners.dit_runners", "TTMochi1Runner"),
    "tt-ltx-2.3-distilled": ("tt_model_runners.dit_runners", "TTLTX23DistilledRunner"),
    "tt-minimax-h3-t2va": ("tt_model_runners.dit_runners", "TTMiniMaxH3Runner"),
}

# Request kind -> (module, class) of HEAD's request object.
REQUESTS = {
    "image": ("domain.image_generate_request", "ImageGenerateRequest"),
    "image_to_image": ("domain.image_to_image_request", "ImageToImageRequest"),
    "edit": ("domain.image_edit_request", "ImageEditRequest"),
    "audio": ("domain.audio_processing_request", "AudioProcessingRequest"),
    "cnn": ("domain.image_search_request", "ImageSearchRequest"),
    "speech": ("domain.text_to_speech_request", "TextToSpeechRequest"),
    "video": ("domain.video_generate_request", "VideoGenerateRequest"),
    "video_i2v": ("domain.video_i2v_generate_request", "VideoI2VGenerateRequest"),
}


log = logging.getLogger("tt_worker")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tt_worker_audio as audio  # noqa: E402  (beside this file)
import tt_worker_cnn as cnn  # noqa: E402
import tt_worker_hooks as hooks  # noqa: E402
import tt_worker_image as image  # noqa: E402
import tt_worker_tts as tts  # noqa: E402
import tt_worker_video as video  # noqa: E402
from tt_worker_protocol import (  # noqa: E402
    PROTOCOL_VERSION, Out, ProtocolError, Writer, get, read_frame, start_heartbeats, wire_error)

# Wire job field -> the module that turns it into the runner's request.
SERVICES = {"image": image, "audio": audio, "cnn": cnn, "speech": tts, "video": video}


# ---------------------------------------------------------------- requests


def import_attr(module, name):
    return getattr(importlib.import_module(module), name)


_request_classes = {}


def request_class(kind):
    """HEAD's request class for a job type, or None (plain objects) when it is not importable."""
    if kind not in _request_classes:
        try:
            _request_classes[kind] = import_attr(*REQUESTS[kind])
            log.info("%s requests: %s.%s from %s", kind, *REQUESTS[kind], inspect.getsourcefile(_request_classes[kind]))
        except ImportError as e:
            log.info("no %s.%s (%s): the runner gets plain request objects", *REQUESTS[kind], e)
            _request_classes[kind] = None
    return _request_classes[kind]


def make_request(kind, fields, private):
    cls = request_class(kind)
    req = cls(**fields) if cls is not None else types.SimpleNamespace(**fields)
    for k, v in private.items():
        setattr(req, k, v)
    return req



def build_request(job_id, w, blobs):
    """The runner's request object for one wire job: (type, request)."""
    for service, module in SERVICES.items():
        if service in w:
            kind, fields, private = module.request(job_id, w[service], blobs)
            return service, make_request(kind, fields, private)
    raise ProtocolError(f"job {job_id} has no request")


# ---------------------------------------------------------------- the worker


class Job:
    def __init__(self, wire, hook):
        self.id = wire["id"]
        self.wire = wire
        self.hook = hook
        self.cancelled = hook.cancelled
        self.deadline = hook.deadline
        self.answered = False
        self.kind = None
        self.request = None


class Worker:
    def __init__(self, group, runner_name, fd_in, fd_out):
        self.group = group
        self.runner_name = runner_name
        self.inp = fd_in
        self.writer = Writer(fd_out)
        self.work = queue.Queue()
        self.jobs = {}
        self.jobs_lock = threading.Lock()
        self.acks = {}
        self.seq = 0
        self.runner = None
        self.loop = None
        self.heartbeat_pid = None
        self.thread = None

    # -- sending

    def send(self, out):
        try:
            self.writer.send(out)
            return True
        except (OSError, ValueError) as e:
            log.error("cannot write to the server: %s", e)
            return False

    def answer(self, job, result=None, error=None, out=None):
        with self.jobs_lock:
            if job.answered:
                return
            job.answered = True
            self.jobs.pop(job.id, None)
        if job.request is not None:
            hooks._forget(job.request)
        msg = out or Out("result", job=job.id)
        if error is not None:
            msg = Out("result", job=job.id, error=error)
        else:
            msg.header["result"] = result
        self.send(msg)

    # -- the main thread

    def serve(self):
        self.thread = threading.Thread(target=self.run_work, name="runner", daemon=True)
        started = False
        try:
            while True:
                frame = read_frame(self.inp)
                if frame is None:
                    break
                header, blobs = frame
                kind = header["kind"]
                if kind == "warmup":
                    version = header.get("version")
                    if version != PROTOCOL_VERSION:
                        self.send(Out("ready", version=PROTOCOL_VERSION, error={"class": "protocol", "message":
                                      f"worker protocol error: the server speaks protocol version {version}, this worker {PROTOCOL_VERSION}"}))
                        continue
                    every = (header.get("heartbeat_ms") or 0) / 1000
                    if every > 0 and self.heartbeat_pid is None and not started:
                        self.heartbeat_pid = start_heartbeats(self.writer, every) or 0
                    if not started:
                        self.thread.start()
                        started = True
                    self.work.put(("warmup", None))
                elif kind == "batch":
                    self.work.put(("batch", self.accept(header.get("jobs") or [], blobs)))
                elif kind == "cancel":
                    with self.jobs_lock:
                        job = self.jobs.get(header.get("job"))
                    if job is not None:
                        job.cancelled.set()
                elif kind == "probe":
                    self.probe(header.get("seq"))
                elif kind == "chunk_ack":
                    ack = self.acks.get(header.get("seq"))
                    if ack is not None:
                        ack[1].append(header.get("error"))
                        ack[0].set()
                elif kind == "shutdown":
                    break
                else:
                    raise ProtocolError(f"unexpected {kind} message from the server")
        finally:
            with self.jobs_lock:
                for job in self.jobs.values():
                    job.cancelled.set()
            self.work.put(("stop", None))
            if started:
                self.thread.join(5)
                if self.thread.is_alive():
                    log.error("runner still busy 5 s after the stop; leaving it to process exit")
            if self.heartbeat_pid:
                try:
                    os.kill(self.heartbeat_pid, signal.SIGKILL)
                    os.waitpid(self.heartbeat_pid, 0)
                except OSError:
                    pass

    def probe(self, seq):
        """Answers a probe with the runner's health_check(deep=False), on its own thread (as
        HEAD's device worker runs canary probes), so this thread keeps reading."""
        def check():
            error = None
            try:
                runner = self.runner
                if runner is None:
                    raise RuntimeError("the runner is not warmed up")
                health = getattr(runner, "health_check", None)
                if health is not None and not bool(self.call_sync(health, deep=False)):
                    raise RuntimeError(f"{type(runner).__name__}.health_check() returned False")
            except Exception as ex:  # noqa: BLE001 - a failed check is the answer
                log.warning("health check failed: %s", ex)
                error = wire_error(ex)
            self.send(Out("probe_result", seq=seq, **({"error": error} if error else {})))

        threading.Thread(target=check, name=f"probe-{seq}", daemon=True).start()

    @staticmethod
    def call_sync(fn, *args, **kwargs):
        res = fn(*args, **kwargs)
        if inspect.isawaitable(res):
            res = asyncio.run(res)
        return res

    def accept(self, wires, blobs):
        """Registers a batch's jobs and builds their requests; undecodable ones are answered."""
        jobs = []
        for w in wires:
            hook = hooks._Job(w.get("id"), float(w.get("deadline") or 0), None, None,
                              int((w.get("image") or {}).get("partial_images") or 0))
            job = Job(w, hook)
            with self.jobs_lock:
                self.jobs[job.id] = job
            try:
                job.kind, job.request = build_request(job.id, w, blobs)
            except Exception as ex:  # noqa: BLE001 - every job gets exactly one answer
                log.warning("job %s: %s", job.id, ex)
                self.answer(job, error=wire_error(ex))
                continue
            if job.kind == "video" and w.get("stream"):
                hook.send_progress = lambda done, total, j=job: self.video_progress(j, done, total)
            elif w.get("progress"):
                hook.send_progress = lambda done, total, j=job: self.send(Out("progress", job=j.id, done=done, total=total))
            if w.get("stream"):
                hook.send_preview = lambda *a, j=job: self.send_preview(j, *a)
            hooks._register(job.request, hook)
            jobs.append(job)
        return jobs

    # -- the runner thread

    def run_work(self):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        while True:
            what, arg = self.work.get()
            if what == "warmup":
                self.warmup()
            elif what == "batch":
                self.run_batch(arg)
            else:
                break
        if self.runner is not None:
            try:
                self.call(self.runner.close_device)
            except Exception:  # noqa: BLE001
                log.error("close_device failed:\n%s", traceback.format_exc())

    def call(self, fn, *args, **kwargs):
        res = fn(*args, **kwargs)
        if inspect.isawaitable(res):
            res = self.loop.run_until_complete(res)
        return res

    def warmup(self):
        error = None
        try:
            if self.runner is None:
                try:
                    cls = runner_class(self.runner_name)
                except Exception as ex:  # noqa: BLE001 - no retry can fix the configuration
                    log.error("cannot load the runner class:\n%s", traceback.format_exc())
                    self.send(Out("ready", version=PROTOCOL_VERSION, error={"class": "config", "message": (
                        f"warm-up of {self.runner_name}: {type(ex).__name__}: {ex} (PYTHON_RUNNER_PATH="
                        f"{os.environ.get('PYTHON_RUNNER_PATH', '')!r}, PYTHON_RUNNER_CLASS="
                        f"{os.environ.get('PYTHON_RUNNER_CLASS', '')!r})")}))
                    return
                log.info("runner %s: %s.%s on device group %r (TT_VISIBLE_DEVICES=%s); bases: %s", self.runner_name,
                         cls.__module__, cls.__name__, self.group, os.environ.get("TT_VISIBLE_DEVICES", ""),
                         ", ".join(f"{b.__module__}.{b.__name__} from {inspect.getsourcefile(b)}" for b in cls.__mro__[1:]
                                   if b.__module__ not in ("builtins", "abc")))
                self.runner = cls(self.group)
                if hasattr(self.runner, "set_device"):
                    self.call(self.runner.set_device)
            start = time.monotonic()
            if self.call(self.runner.warmup) is False:
                raise RuntimeError("warmup() returned False (the runner is not ready)")
            log.info("runner warm in %.2f s", time.monotonic() - start)
        except BaseException as ex:  # noqa: BLE001 - reported as the ready error
            log.error("warm-up failed:\n%s", traceback.format_exc())
            error = wire_error(ex)
            error["message"] = f"warm-up of {self.runner_name}: {error['message']}"
        self.send(Out("ready", version=PROTOCOL_VERSION, probes=True, **({"error": error} if error else {})))

    def run_batch(self, jobs):
        if self.runner is None:
            for job in jobs:
                self.answer(job, error={"class": "", "message": "the runner is not warmed up"})
            return
        plain = []
        for job in jobs:
            if job.kind == "audio" and job.wire.get("stream") and job.wire["audio"].get("stream"):
                self.run_stream(job)
            else:
                plain.append(job)
        for group in self.batchable_groups(plain):
            self.run_plain(group)

    def batchable_groups(self, jobs):
        groups, cur = [], []
        check = getattr(self.runner, "is_request_batchable", None)
        for job in jobs:
            if cur and (cur[0].kind != job.kind or (check is not None and not check(job.request, [j.request for j in cur]))):
                groups.append(cur)
                cur = []
            cur.append(job)
        if cur:
            groups.append(cur)
        return groups

    def stopped_error(self, job):
        if job.cancelled.is_set():
            return {"class": "canceled", "message": "cancelled by the server"}
        if job.deadline and time.time() >= job.deadline:
            return {"class": "deadline", "message": "the job's deadline passed"}
        return None

    def run_plain(self, jobs):
        live = []
        for job in jobs:
            err = self.stopped_error(job)
            if err:  # cancelled or expired while queued: no device time
                self.answer(job, error=err)
            else:
                live.append(job)
        if live and live[0].kind == "video":
            live = self.start_videos(live)
        if not live:
            return
        try:
            responses = self.call(self.runner.run, [j.request for j in live])
            if responses is None or len(responses) < len(live):
                raise RuntimeError(f"the runner returned {0 if responses is None else len(responses)} responses for {len(live)} requests")
        except BaseException as ex:  # noqa: BLE001 - every job gets exactly one answer
            if not isinstance(ex, hooks.Cancelled):
                log.error("run failed:\n%s", traceback.format_exc())
            for job in live:
                self.answer(job, error=wire_error(ex, job))
            return
        for job, resp in zip(live, responses):
            err = self.stopped_error(job)
            if err:
                self.answer(job, error=err)
                continue
            out = Out("result", job=job.id)
            try:
                result = self.convert(out, job, resp)
            except Exception as ex:  # noqa: BLE001
                log.error("job %s: cannot convert the runner's %s: %s", job.id, type(resp).__name__, ex)
                self.answer(job, error={"class": "", "message": f"unusable runner result: {ex}"})
                continue
            self.answer(job, result=result, out=out)

    def convert(self, out, job, resp):
        if job.kind == "image":
            return image.image_result(out, resp)
        if job.kind == "audio":
            return audio.transcript_result(resp, job.wire["audio"])
        if job.kind == "speech":
            tts.runner_processor = getattr(self.runner, "processor", None)
            samples, fields = tts.speech_result(resp, job.request)
            fields["samples"] = out.blob(samples)
            return {"speech": fields}
        if job.kind == "video":
            fps = video.video_fps(self.runner)
            path = video.video_file(resp)
            if path is not None:  # a self-encoding runner's MP4: its path, never its bytes
                return {"video": {"file": path, "fps": fps}}
            pixels, width, height, frames = video.video_frames(resp)
            return {"video": {"width": width, "height": height, "fps": fps, "frames": frames,
                              "pixels": out.blob(pixels)}}
        return cnn.cnn_result(out, resp)

    def video_progress(self, job, done, total):
        """A video job's progress as the server's acked chunk; its refusal (the job was
        cancelled or deleted) stops the runner (hooks.Cancelled)."""
        if self.progress_wanted(job):
            self.send(Out("progress", job=job.id, done=int(done), total=int(total)))
        err = self.emit(job, Out("chunk", job=job.id, video_progress={"done": int(done), "total": int(total)}))
        if err is not None:
            raise hooks.Cancelled(err.get("message", "the server stopped the job"))

    @staticmethod
    def progress_wanted(job):
        return bool(job.wire.get("progress"))

    def start_videos(self, jobs):
        """Tells the server that the device has taken each video job (progress 0 of its
        steps); a job the server refuses (cancelled meanwhile) is answered and left out."""
        live = []
        for job in jobs:
            if not job.wire.get("stream"):
                live.append(job)
                continue
            try:
                self.video_progress(job, 0, int(job.wire["video"].get("num_inference_steps") or 0))
            except hooks.Cancelled as ex:
                self.answer(job, error=wire_error(ex, job))
                continue
            live.append(job)
        return live

    def run_stream(self, job):
        """A streaming transcription: HEAD's runners yield {"type": "streaming_chunk", "chunk":
        AudioStreamChunk} items, then {"type": "final_result", "result": AudioTextResponse}."""
        err = self.stopped_error(job)
        if err:
            self.answer(job, error=err)
            return

        async def consume():
            run_async = getattr(self.runner, "_run_async", None)
            if run_async is not None:
                items = run_async([job.request])
                if inspect.isawaitable(items):
                    items = await items
            else:
                items = self.runner.run([job.request])
            final = None
            if hasattr(items, "__aiter__"):
                try:
                    async for item in items:
                        final = self.stream_item(job, item, final)
                finally:
                    await items.aclose()
            else:
                for item in items:
                    final = self.stream_item(job, item, final)
            return final

        try:
            final = self.loop.run_until_complete(consume())
            if final is None:
                raise RuntimeError("the runner's stream ended without a final result")
            err = self.stopped_error(job)
            if err:
                self.answer(job, error=err)
                return
            self.answer(job, result=audio.transcript_result(final, job.wire["audio"]))
        except BaseException as ex:  # noqa: BLE001
            if not isinstance(ex, hooks.Cancelled) and not job.cancelled.is_set():
                log.error("stream failed:\n%s", traceback.format_exc())
            self.answer(job, error=wire_error(ex, job))

    def stream_item(self, job, item, final):
        kind = get(item, "type")
        if kind == "streaming_chunk":
            chunk = get(item, "chunk")
            text = get(chunk, "text") or ""
            if text:
                err = self.emit(job, Out("chunk", job=job.id, transcript={"text": text, "chunk_id": int(get(chunk, "chunk_id") or 0)}))
                if err is not None:
                    raise hooks.Cancelled(err.get("message", "the server refused the chunk"))
            return final
        if kind == "final_result":
            return get(item, "result")
        if get(item, "text") is not None:  # a bare result
            return item
        raise ProtocolError(f"stream item {item!r:.80} is neither a streaming_chunk nor a final_result")

    def emit(self, job, out):
        """Sends a chunk and waits for the server's answer: None, or its error (the client has
        gone, the stream refuses previews)."""
        if self.stopped_error(job):
            return self.stopped_error(job)
        ev, box = threading.Event(), []
        with self.jobs_lock:
            self.seq += 1
            seq = self.seq
            self.acks[seq] = (ev, box)
        out.header["seq"] = seq
        try:
            if not self.send(out):
                return {"class": "", "message": "cannot write to the server"}
            while not ev.wait(0.05):
                err = self.stopped_error(job)
                if err:
                    return err
            return box[0]
        finally:
            self.acks.pop(seq, None)

    def send_preview(self, job, index, image_index, step, steps, picture):
        out = Out("chunk", job=job.id)
        preview = {"index": index, "image_index": image_index, "step": step, "steps": steps}
        if picture is not None:
            preview["image"] = image.wire_image(out, picture)
        out.header["preview"] = preview
        err = self.emit(job, out)
        if err is None:
            return True
        if err.get("class") in ("canceled", "deadline") or job.cancelled.is_set():
            raise hooks.Cancelled(err.get("message"))
        job.hook.previews_refused = True
        return False


def runner_class(name):
    override = os.environ.get("PYTHON_RUNNER_CLASS", "").strip()
    if override:
        module, _, cls = override.partition(":")
        if not module or not cls:
            raise ValueError(f"PYTHON_RUNNER_CLASS={override!r} is not module:Class")
        return runnable(import_attr(module, cls))
    if name not in RUNNERS:
        raise ValueError(f"MODEL_RUNNER {name!r} has no Python runner (known: {', '.join(sorted(RUNNERS))}; "
                         "or set PYTHON_RUNNER_CLASS=module:Class)")
    return runnable(import_attr(*RUNNERS[name]))


def runnable(cls):
    """cls, or, when it leaves BaseDeviceRunner's abstract run() undefined but has
    run_inference(requests) (HEAD's TTYolov4Runner), a subclass of the same name whose run is
    its run_inference."""
    if "run" in getattr(cls, "__abstractmethods__", ()) and callable(getattr(cls, "run_inference", None)):
        return type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                           "run": lambda self, requests: self.run_inference(requests)})
    return cls


def main(argv):
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} GROUP [RUNNER]   (started by tt-media-server; GROUP as in DEVICE_IDS)", file=sys.stderr)
        return 2
    group = argv[1]
    runner = argv[2] if len(argv) == 3 else os.environ.get("MODEL_RUNNER", "")
    # The protocol owns the real stdout; everything else written to fd 1 goes to stderr.
    proto_out = os.dup(1)
    os.set_inheritable(proto_out, False)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable()
    level = os.environ.get("LOG_LEVEL", "INFO").upper()
    logging.basicConfig(stream=sys.stderr, format="level=%(levelname)s msg=%(message)s",
                        level={"WARN": "WARNING", "CRITICAL": "ERROR", "FATAL": "ERROR", "NOTSET": "DEBUG"}.get(level, level)
                        if level in ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL", "NOTSET") else "INFO")
    for p in reversed([p for p in os.environ.get("PYTHON_RUNNER_PATH", "").split(os.pathsep) if p]):
        sys.path.insert(0, p)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops us with shutdown or SIGKILL
    log.info("python worker serving: pid %d, group %r, runner %s, python %s", os.getpid(), group, runner,
             sys.version.split()[0])
    w = Worker(group, runner, sys.stdin.buffer, proto_out)
    try:
        w.serve()
    except ProtocolError as e:
        log.error("worker protocol error: %s", e)
        return 1
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stderr.flush()
    os._exit(code)  # a runner thread stuck in a device call must not keep the process alive
