"""Optional hooks a model runner hosted by tt_worker.py may call while it computes.

Tenstorrent's runners (tt-media-server HEAD's BaseDeviceRunner subclasses) know nothing of
these and still work: their jobs are cancelled when run() returns and they send no progress or
previews. A runner written for this server (or a fake in tests) can do better:

    import tt_worker_hooks as hooks
    for step in range(steps):
        if hooks.stopped(request):          # the client went away or the deadline passed
            raise hooks.Cancelled()
        ...
        hooks.progress(request, step + 1, steps)
        hooks.preview(request, index, image_index, step + 1, steps, pil_image)  # streaming only

Every function is a no-op (or False) for a request the worker does not know, so a runner can
call them unconditionally. Standard library only.
"""

import threading
import time

_lock = threading.Lock()
_jobs = {}  # id(request) -> _Job


class BadRequest(ValueError):
    """The request cannot be served (the client gets 400)."""


class DeviceLost(RuntimeError):
    """The device is gone: the server fails the job with 503, resets the group's chips and
    starts a new worker."""


class Cancelled(Exception):
    """Raised by a runner that stopped a job because hooks.stopped() said so."""


class _Job:
    """What the worker knows of one request: set by tt_worker.py."""

    def __init__(self, job_id, deadline, send_progress, send_preview, partial_images):
        self.id = job_id
        self.deadline = deadline  # Unix seconds, 0: none
        self.cancelled = threading.Event()
        self.send_progress = send_progress  # None unless the server relays progress
        self.send_preview = send_preview  # None unless the job streams
        self.partial_images = partial_images
        self.previews_refused = False


def _register(request, job):
    with _lock:
        _jobs[id(request)] = job


def _forget(request):
    with _lock:
        _jobs.pop(id(request), None)


def _job(request):
    with _lock:
        return _jobs.get(id(request))


def cancelled(request):
    """True once the server cancelled the request (its client went away)."""
    j = _job(request)
    return bool(j and j.cancelled.is_set())


def deadline(request):
    """The request's deadline in Unix seconds (0: none)."""
    j = _job(request)
    return j.deadline if j else 0


def stopped(request):
    """True when the request should stop: cancelled, or past its deadline."""
    j = _job(request)
    if j is None:
        return False
    return j.cancelled.is_set() or (j.deadline > 0 and time.time() >= j.deadline)


def progress(request, done, total):
    """Report that step done of total is finished."""
    j = _job(request)
    if j and j.send_progress:
        j.send_progress(int(done), int(total))


def partial_images(request):
    """How many previews the client asked for (0 when the request does not stream)."""
    j = _job(request)
    if j is None or j.send_preview is None or j.previews_refused:
        return 0
    return j.partial_images


def preview(request, index, image_index, step, steps, image):
    """Stream preview index (0-based, < partial_images(request)) of the request's
    image_index-th image after step of steps; image is a PIL image (or None). Returns True when
    the server took it; False when the stream cannot carry previews (then stop sending them)
    or the request does not stream. Raises Cancelled when the client has gone."""
    j = _job(request)
    if j is None or j.send_preview is None or j.previews_refused:
        return False
    return j.send_preview(int(index), int(image_index), int(step), int(steps), image)
