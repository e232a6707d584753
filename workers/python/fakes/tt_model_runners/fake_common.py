"""Latency and fault injection shared by the fake runners (ours; see ../README.md)."""

import asyncio
import json
import os
import re
import time

import ttnn
import tt_worker_hooks as hooks

from tt_model_runners.base_device_runner import BaseDeviceRunner


def mesh_shape(runner):
    """The worker's mesh: HEAD's settings.device_mesh_shape on the HEAD road (the server's
    DEVICE_MESH_SHAPE as HEAD parsed it), else DEVICE_MESH_SHAPE as the server passes it ("[1,1]")."""
    settings = getattr(runner, "settings", None)
    if settings is not None:
        rows, cols = settings.device_mesh_shape
        return int(rows), int(cols)
    rows, cols = (int(x) for x in re.findall(r"\d+", os.environ.get("DEVICE_MESH_SHAPE", "[1,1]")))
    return rows, cols


def seconds(name, default=0.0):
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


def hold_gil(target):
    """One C call (a backtracking regex) that keeps the GIL for about target seconds."""
    k, t = 16, 0.0
    while True:
        start = time.perf_counter()
        re.match(r"(a+)+$", "a" * k + "b")
        t = time.perf_counter() - start
        if t * 2 >= target or k > 40:
            return t
        k += 1


def trigger(text):
    """Acts on the fault triggers of a request's prompt."""
    if not text:
        return
    if "[[crash]]" in text:
        os.abort()
    if "[[hang]]" in text:
        while True:
            time.sleep(3600)
    if "[[fail]]" in text:
        raise RuntimeError("fake device error ([[fail]] in the prompt)")
    if "[[bad]]" in text:
        raise ValueError("fake runner refuses the request ([[bad]] in the prompt)")
    m = re.search(r"\[\[gil:([0-9.]+)\]\]", text)
    if m:
        hold_gil(float(m.group(1)))


def dump_settings(path):
    """Writes HEAD's own get_settings() as JSON to path (the HEAD road only)."""
    from config.settings import get_settings

    with open(path + ".tmp", "w") as f:
        json.dump(get_settings().model_dump(mode="json"), f)
    os.replace(path + ".tmp", path)


class FakeRunner(BaseDeviceRunner):
    """A fake device runner: opens a fake mesh, sleeps the MOCK_* latencies, injects faults."""

    def __init__(self, device_id):
        super().__init__(device_id)
        self.calls = 0

    def set_device(self):
        rows, cols = mesh_shape(self)
        self.ttnn_device = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(rows, cols), l1_small_size=1024)
        return {"mesh_shape": (rows, cols), "chips": self.ttnn_device.get_device_ids()}

    async def warmup(self):
        msg = os.environ.get("FAKE_RUNNER_WARMUP_FAIL")
        if msg:
            raise RuntimeError(f"fake warm-up failure: {msg}")
        dump = os.environ.get("FAKE_RUNNER_SETTINGS_DUMP")
        if dump:
            dump_settings(dump)
        await asyncio.sleep(seconds("MOCK_WARMUP_SECONDS", 0.0))
        self.logger.info(f"fake {type(self).__name__} warm on chips {self.ttnn_device.get_device_ids()}")
        return True

    def health_check(self, deep=False):
        if os.environ.get("FAKE_RUNNER_HEALTH_FAIL"):
            return False
        ttnn.synchronize_device(self.ttnn_device)  # raises once the device is closed
        return True

    def close_device(self):
        if self.ttnn_device is not None:
            ttnn.close_mesh_device(self.ttnn_device)
            self.ttnn_device = None
        return True

    def count_call(self):
        self.calls += 1
        crash = int(os.environ.get("FAKE_RUNNER_CRASH_AFTER", "0") or 0)
        if crash and self.calls == crash:
            os.abort()
        every = int(os.environ.get("FAKE_RUNNER_FAIL_EVERY", "0") or 0)
        if every and self.calls % every == 0:
            raise RuntimeError(f"fake device error (FAKE_RUNNER_FAIL_EVERY={every}, call {self.calls})")
        if self.ttnn_device is None:
            raise RuntimeError("TT_THROW: device not open")

    def sleep(self, requests, duration):
        """Device time: sleeps duration, stopping early (hooks.Cancelled) when every request of
        the batch has been cancelled or is past its deadline."""
        end = time.monotonic() + duration
        while True:
            if requests and all(hooks.stopped(r) for r in requests):
                raise hooks.Cancelled()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.02))
