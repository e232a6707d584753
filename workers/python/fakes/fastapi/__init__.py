"""Stand-in (ours, tests only) for the three names HEAD's utils/image_manager.py imports from
fastapi: HTTPException, Path and UploadFile. HEAD's VideoI2VGenerateRequest validates its
base64 images through ImageManager, so HEAD's road needs the module importable; this machine
has no fastapi that works with pydantic 2 (Debian's python3-fastapi is built for pydantic 1, and
the project installs nothing from PyPI). A Tenstorrent host runs the real fastapi (its
PYTHON_RUNNER_PATH has no fakes)."""


class HTTPException(Exception):
    def __init__(self, status_code, detail=None, headers=None):
        super().__init__(f"{status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail
        self.headers = headers


def Path(default=..., **kwargs):  # noqa: N802 - fastapi's spelling
    return default


class UploadFile:
    def __init__(self, file, filename=None, content_type=None):
        self.file = file
        self.filename = filename
        self.content_type = content_type

    async def read(self, size=-1):
        return self.file.read(size)
