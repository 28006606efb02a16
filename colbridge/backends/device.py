"""Device selection: decide once per process whether a usable GPU exists, without crashing.

CuPy is imported lazily (or the stand-in installed with
`colbridge.memory.cuda.use_cupy` is used) and asked
``cudaGetDeviceCount`` directly, so a failure reports the driver's own cause
(no driver, a driver older than CuPy's runtime, no device visible, MIG without
an instance, a busy device) instead of a bare "no GPU". numba's CUDA detection
is never used for this decision.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from colbridge.errors import DeviceError, DeviceFallbackWarning

__all__ = ["DeviceChoice", "device_context", "gpu_status", "resolve_device"]

FALLBACKS = ("cpu", "raise")


@dataclass(frozen=True)
class DeviceChoice:
    """Where a compute runs, and why (reported by `explain()`)."""

    target: str  # "cpu" or "cuda"
    requested: str
    note: str
    index: int = 0  # the CUDA device (as CUDA_VISIBLE_DEVICES numbers them) when target is cuda


def gpu_status() -> tuple[bool, str]:
    """(usable, reason), computed once per process (once per installed CuPy stand-in)."""
    ok, reason, _count = _probe_current()
    return ok, reason


def _installed_stand_in() -> Any:
    """The CuPy stand-in installed for tests (`colbridge.testing`), if any."""
    cuda_memory = sys.modules.get("colbridge.memory.cuda")
    if cuda_memory is None:  # asked at every compute: import once, then look up
        cuda_memory = importlib.import_module("colbridge.memory.cuda")
    return cuda_memory._CUPY.get()


def _probe_current() -> tuple[bool, str, int]:
    installed = _installed_stand_in()
    return _probe(installed) if installed is not None else _probe_cupy()


# Device nodes an NVIDIA driver makes: desktops and servers, WSL 2, Jetson boards.
_DRIVER_NODES = ("/dev/nvidiactl", "/proc/driver/nvidia", "/dev/dxg", "/dev/nvhost-ctrl-gpu")


@functools.lru_cache(maxsize=1)
def _no_driver() -> str | None:
    """Why no NVIDIA GPU can be used here, when that is known without importing CuPy.

    On Linux a loaded NVIDIA driver shows one of `_DRIVER_NODES`; without one,
    `import cupy` (60 ms) would only lead to a failing driver call. Used by
    ``device="auto"`` only: an explicit ``"cuda"`` asks CuPy, whose error names the
    driver's own cause. Elsewhere than Linux, CuPy is always asked.
    """
    if sys.platform != "linux" or any(os.path.exists(node) for node in _DRIVER_NODES):
        return None
    return f"no NVIDIA driver is loaded on this machine (none of {', '.join(_DRIVER_NODES)})"


@functools.lru_cache(maxsize=1)
def _probe_cupy() -> tuple[bool, str, int]:
    try:
        if importlib.util.find_spec("cupy") is None:
            msg = "cupy"
            raise ImportError(msg)
        import cupy
    except (ImportError, ValueError):  # absent, or present but failing to import
        return (
            False,
            "CuPy is not installed (install the `gpu` extra: `pip install colbridge[gpu]`)",
            0,
        )
    return _probe(cupy)


@functools.lru_cache(maxsize=8)
def _probe(cp: Any) -> tuple[bool, str, int]:
    from colbridge.memory.cuda import describe_cuda_failure

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    hidden = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    try:
        count = int(cp.cuda.runtime.getDeviceCount())
    except Exception as exc:  # the driver's cause, in its own words and ours
        return False, f"CuPy found no usable CUDA device: {describe_cuda_failure(cp, exc)}", 0
    if count == 0:
        return False, f"CuPy found no CUDA device (the driver reports 0 devices){hidden}", 0
    return True, f"{count} CUDA device(s){hidden}", count


def _parse(device: str) -> tuple[str, int | None]:
    if device in ("auto", "cpu", "cuda"):
        return device, None
    if device.startswith("cuda:") and device[5:].isdigit():
        return "cuda", int(device[5:])
    msg = f"unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'"
    raise DeviceError(msg)


@functools.lru_cache(maxsize=8)
def _auto_on_cpu(device: str, missing: str) -> DeviceChoice:
    """``auto`` on a machine without a GPU driver (the same choice at every compute)."""
    return DeviceChoice("cpu", device, f"auto: no usable GPU ({missing}), running on cpu")


def resolve_device(device: str = "auto", fallback: str = "cpu") -> DeviceChoice:
    """Pick the backend for ``device`` under the ``fallback`` policy.

    ``"auto"`` takes a usable GPU when the CUDA backend can run, else the CPU.
    ``"cuda"``/``"cuda:N"`` without a usable GPU either falls back to the CPU
    with a `DeviceFallbackWarning` (``fallback="cpu"``) or raises `DeviceError`
    (``fallback="raise"``).
    """
    if fallback not in FALLBACKS:
        msg = f"unknown fallback policy {fallback!r}; use 'cpu' or 'raise'"
        raise DeviceError(msg)
    kind, index = _parse(device)
    if kind == "cpu":
        return DeviceChoice("cpu", device, "cpu requested")
    if kind == "auto" and _installed_stand_in() is None:
        missing = _no_driver()
        if missing is not None:
            return _auto_on_cpu(device, missing)
    usable, reason, count = _probe_current()
    if usable:
        wanted = index or 0
        if wanted < count:
            return DeviceChoice("cuda", device, f"cuda:{wanted} ({reason})", wanted)
        reason = f"device index {wanted} is out of range: {reason}"
    if kind == "auto":
        return DeviceChoice("cpu", device, f"auto: no usable GPU ({reason}), running on cpu")
    if fallback == "raise":
        msg = f"no usable GPU for device={device!r}: {reason}; use device='cpu' or fallback='cpu'"
        raise DeviceError(msg)
    note = f"fell back to cpu: no usable GPU for device={device!r} ({reason})"
    warnings.warn(note, DeviceFallbackWarning, stacklevel=4)
    return DeviceChoice("cpu", device, note)


@contextlib.contextmanager
def device_context(choice: DeviceChoice) -> Iterator[None]:
    """Bind the chosen device for the duration of a compute (a no-op on the CPU)."""
    if choice.target != "cuda":
        yield
        return
    from colbridge.backends import cuda

    with cuda.options(device=choice.index):
        yield
