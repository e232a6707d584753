"""Fake of HEAD's tt_model_runners.base_device_runner (ours): the same interface, for the plain
road (no HEAD tree, no pydantic). On the HEAD road the fakes subclass HEAD's real class."""

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

