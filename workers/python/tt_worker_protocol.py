"""The worker protocol's frames for tt_worker.py (docs/WORKER-PROTOCOL.md): length-prefixed JSON
headers with raw blobs, the writer shared with the heartbeat process, the heartbeats, and an
exception as the protocol's error. Standard library only.
"""

import ctypes
import json
import logging
import os
import signal
import struct
import threading
import time

import tt_worker_hooks as hooks

PROTOCOL_VERSION = 3
MAX_FRAME = 256 << 20
MAX_HEADER = 16 << 20

log = logging.getLogger("tt_worker")


class ProtocolError(Exception):
    pass


# ---------------------------------------------------------------- frames


class Out:
    """An outgoing message: a header dict plus its blobs."""

    def __init__(self, kind, **fields):
        self.header = {"kind": kind}
        self.header.update(fields)
        self.blobs = []

    def blob(self, data):
        self.blobs.append(data)
        return len(self.blobs) - 1

    def encode(self):
        if self.blobs:
            self.header["blobs"] = [len(b) for b in self.blobs]
        hdr = json.dumps(self.header, separators=(",", ":"), allow_nan=False).encode()
        n = 4 + len(hdr) + sum(len(b) for b in self.blobs)
        if n > MAX_FRAME:
            raise ProtocolError(f"{self.header['kind']} frame of {n} bytes exceeds {MAX_FRAME}")
        return b"".join([struct.pack(">II", n, len(hdr)), hdr] + [bytes(b) if not isinstance(b, bytes) else b for b in self.blobs])


def read_exact(f, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            return bytes(buf)
        buf += chunk
    return bytes(buf)


def read_frame(f):
    """Returns (header, blobs) or None at a clean end of input."""
    first = read_exact(f, 4)
    if not first:
        return None
    if len(first) < 4:
        raise ProtocolError("truncated frame length")
    (n,) = struct.unpack(">I", first)
    if n < 4 or n > MAX_FRAME:
        raise ProtocolError(f"frame length {n}")
    body = read_exact(f, n)
    if len(body) != n:
        raise ProtocolError(f"truncated frame ({len(body)} of {n} bytes)")
    (h,) = struct.unpack(">I", body[:4])
    if h == 0 or h > MAX_HEADER or h > n - 4:
        raise ProtocolError(f"header length {h} in a frame of {n} bytes")
    try:
        header = json.loads(body[4:4 + h])
    except ValueError as e:
        raise ProtocolError(f"decode frame header: {e}") from None
    if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
        raise ProtocolError("frame header is not a message")
    payload = memoryview(body)[4 + h:]
    blobs, off = [], 0
    for length in header.get("blobs") or []:
        if not isinstance(length, int) or length < 0 or off + length > len(payload):
            raise ProtocolError(f"blob of {length} bytes beyond the payload")
        blobs.append(payload[off:off + length])
        off += length
    if off != len(payload):
        raise ProtocolError(f"blobs of {off} bytes in a payload of {len(payload)}")
    return header, blobs


def blob_at(blobs, index):
    if not isinstance(index, int) or index < 0 or index >= len(blobs):
        raise ProtocolError(f"blob {index} of {len(blobs)}")
    return blobs[index]


class Writer:
    """Writes whole frames to the protocol descriptor; the lock is shared with the heartbeat
    process, so frames never interleave."""

    def __init__(self, fd):
        self.fd = fd
        self.thread_lock = threading.Lock()
        try:
            import multiprocessing

            self.proc_lock = multiprocessing.Lock()
        except (ImportError, OSError) as e:  # no POSIX semaphores: heartbeats from a thread
            log.warning("no process-shared lock (%s): heartbeats come from a thread", e)
            self.proc_lock = None

    def send(self, out):
        data = out.encode()
        with self.thread_lock:
            if self.proc_lock is not None:
                self.proc_lock.acquire()
            try:
                write_all(self.fd, data)
            finally:
                if self.proc_lock is not None:
                    self.proc_lock.release()


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


# ---------------------------------------------------------------- heartbeats


def process_stopped(pid):
    """True when pid is stopped (SIGSTOP, a debugger) or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        state = stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3]
        return state in (b"T", b"t", b"Z")
    except (OSError, ValueError):
        return False


def start_heartbeats(writer, every):
    """Forks the heartbeat process (before any thread exists). It beats every `every` seconds
    while this process lives and is not stopped, and dies with it (PR_SET_PDEATHSIG)."""
    frame = Out("heartbeat").encode()
    if writer.proc_lock is None:
        def beat():
            while True:
                time.sleep(every)
                with writer.thread_lock:
                    write_all(writer.fd, frame)
        threading.Thread(target=beat, name="heartbeat", daemon=True).start()
        return None
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the heartbeat process
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            time.sleep(every)
            if os.getppid() != parent:
                break
            if process_stopped(parent):
                continue
            if not writer.proc_lock.acquire(timeout=every):
                continue
            try:
                write_all(writer.fd, frame)
            finally:
                writer.proc_lock.release()
    except BaseException:  # noqa: BLE001 - the helper must never run the worker's code
        pass
    os._exit(0)


# ---------------------------------------------------------------- errors


def wire_error(ex, job=None):
    """An exception as the protocol's error: class and message."""
    if isinstance(ex, hooks.Cancelled) or (job is not None and job.cancelled.is_set()):
        if job is not None and not job.cancelled.is_set() and job.deadline and time.time() >= job.deadline:
            return {"class": "deadline", "message": "the job's deadline passed"}
        return {"class": "canceled", "message": "cancelled by the server"}
    if isinstance(ex, hooks.DeviceLost):
        cls = "device_lost"
    elif isinstance(ex, ProtocolError):
        cls = "protocol"
    elif isinstance(ex, (ValueError, TypeError)) and not isinstance(ex, UnicodeError):
        cls = "bad_request"  # HEAD's requests and runners reject bad input with ValueError
    else:
        cls = ""
    text = str(ex) or type(ex).__name__
    return {"class": cls, "message": f"{type(ex).__name__}: {text}"}



def get(obj, key, default=None):
    """obj[key] for a dict, else the attribute (HEAD's answers are objects or dicts)."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)
