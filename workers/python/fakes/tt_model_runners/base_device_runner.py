"""Fake of HEAD's tt_model_runners.base_device_runner (ours): the same interface."""

import logging
import os
from abc import ABC, abstractmethod


class BaseDeviceRunner(ABC):
    def __init__(self, device_id: str):
        self.device_id = device_id
        self.logger = logging.getLogger(type(self).__name__)
        self.ttnn_device = None

    @abstractmethod
    async def warmup(self) -> bool:
        pass

    @abstractmethod
    def run(self, *args, **kwargs):
        pass

    def health_check(self, deep: bool = False) -> bool:
        return True

    def set_device(self):
        return {}

    def close_device(self):
        return True

    def is_request_batchable(self, request, batch=None):
        return True


def mesh_shape():
    """DEVICE_MESH_SHAPE as the server passes it: "(rows,cols)"."""
    raw = os.environ.get("DEVICE_MESH_SHAPE", "(1,1)").strip("() ")
    rows, cols = (int(x) for x in raw.split(","))
    return rows, cols
