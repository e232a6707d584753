"""Fake of HEAD's domain.base_request (ours): plain classes instead of pydantic models."""

import uuid


class BaseRequest:
    """Fields and defaults come from _fields; unknown keyword arguments are refused like
    pydantic's forbid would, and validate() raises ValueError as pydantic's validators do."""

    _fields = {}

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(unknown)}")
        for name, default in self._fields.items():
            setattr(self, name, kwargs.get(name, default))
        self._task_id = str(uuid.uuid4())
        self.validate()

    def validate(self):
        pass
