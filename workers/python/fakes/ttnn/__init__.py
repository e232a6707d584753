"""A fake ttnn for tests (ours): enough of the device API for the fake runners. The mesh must
fit the chips of TT_VISIBLE_DEVICES, as on hardware."""

import os

DispatchCoreType = type("DispatchCoreType", (), {"WORKER": "worker", "ETH": "eth"})
FabricConfig = type("FabricConfig", (), {"DISABLED": "disabled", "FABRIC_1D": "fabric_1d"})

_open = []


class MeshShape(tuple):
    def __new__(cls, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return super().__new__(cls, (int(dims[0]), int(dims[1])))


class MeshDevice:
    def __init__(self, ids, shape, options):
        self.ids = ids
        self.shape = shape
        self.options = options
        self.closed = False

    def get_num_devices(self):
        return len(self.ids)

    def get_device_ids(self):
        return list(self.ids)


def visible_chips():
    v = os.environ.get("TT_VISIBLE_DEVICES", "").strip()
    if v:
        return [int(x) for x in v.split(",")]
    return list(range(int(os.environ.get("FAKE_TTNN_CHIPS", "8"))))


def set_fabric_config(config):
    pass


def open_mesh_device(mesh_shape=None, l1_small_size=0, trace_region_size=0, num_command_queues=1,
                     dispatch_core_config=None, **kwargs):
    shape = MeshShape(mesh_shape or (1, 1))
    chips = visible_chips()
    need = shape[0] * shape[1]
    if need > len(chips):
        raise RuntimeError(f"TT_THROW: mesh {tuple(shape)} needs {need} chips; TT_VISIBLE_DEVICES gives {len(chips)}")
    dev = MeshDevice(chips[:need], shape, dict(l1_small_size=l1_small_size, trace_region_size=trace_region_size,
                                               num_command_queues=num_command_queues, **kwargs))
    _open.append(dev)
    return dev


def close_mesh_device(device):
    device.closed = True
    if device in _open:
        _open.remove(device)


def synchronize_device(device):
    if device.closed:
        raise RuntimeError("TT_THROW: device is closed")
