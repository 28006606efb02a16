"""Testing: run generated CUDA kernels on the CPU, without a GPU, by compiling them with g++.

Stage: testing (a stand-in `Runtime` for `colbridge.backends.cuda`). The very
same kernel text NVRTC compiles is compiled with g++ (``-O2 -ffp-contract=off
-fno-fast-math``) together with ``cuda_host.h``, a small header that stands in
for the CUDA built-ins (``__global__``, ``threadIdx``/``blockIdx``/...,
``atomicAdd``, bit casts). A launch runs every (block, thread) pair of the grid
in turn. Shared libraries are cached by source hash in
``<colbridge cache>/cuda_host`` so repeated test runs do not recompile.

Outputs are filled with a poison byte before a launch, so a byte a kernel
forgets to write shows up as a wrong answer instead of a lucky zero.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.cuda import Runtime, numbered, use_runtime
from colbridge.backends.kernel_cache import cache_dir
from colbridge.codegen.cuda import CudaKernelSource
from colbridge.errors import KernelCompileError

__all__ = ["GXX_FLAGS", "HEADER", "HostRuntime", "compile_host", "compute_on_host"]

#: The stand-in header for the CUDA built-ins.
HEADER = Path(__file__).with_name("cuda_host.h")
#: g++ flags: no contraction into FMA, no fast math, so float results match the CPU backend.
GXX_FLAGS: tuple[str, ...] = (
    "-O2", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-w",
)  # fmt: skip
#: Byte written into every output before a launch.
POISON = 0xA5

_LOCK = threading.Lock()
_LOADED: dict[str, ctypes.CDLL] = {}

_CTYPES: dict[str, Any] = {
    "bool": ctypes.c_bool,
    "signed char": ctypes.c_int8,
    "short": ctypes.c_int16,
    "int": ctypes.c_int32,
    "long long": ctypes.c_int64,
    "unsigned char": ctypes.c_uint8,
    "unsigned short": ctypes.c_uint16,
    "unsigned int": ctypes.c_uint32,
    "unsigned long long": ctypes.c_uint64,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
}


def compile_host(kernel: CudaKernelSource) -> ctypes.CDLL:
    """The kernel compiled with g++ as a shared library exporting ``cb_host_<name>``."""
    header = HEADER.read_text()
    wrapper = f'#include "{HEADER.name}"\n#include "kernel.cu"\nCB_HOST_ENTRY({kernel.name})\n'
    key = hashlib.sha256("\0".join((header, kernel.source, wrapper, *GXX_FLAGS)).encode())
    digest = key.hexdigest()[:40]
    with _LOCK:
        lib = _LOADED.get(digest)
        if lib is not None:
            return lib
        folder = cache_dir() / "cuda_host"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = folder / f"k_{digest}.so"
        if not target.exists():
            _build(kernel.source, header, wrapper, target)
        lib = ctypes.CDLL(str(target))
        _LOADED[digest] = lib
        return lib


def _build(source: str, header: str, wrapper: str, target: Path) -> None:
    gxx = shutil.which("g++")
    if gxx is None:
        msg = "g++ is needed to run CUDA kernels on the host and was not found on PATH"
        raise KernelCompileError(msg)
    with tempfile.TemporaryDirectory(prefix="cbhost_") as tmp:
        folder = Path(tmp)
        (folder / HEADER.name).write_text(header)
        (folder / "kernel.cu").write_text(source)
        (folder / "wrapper.cpp").write_text(wrapper)
        out = folder / "k.so"
        proc = subprocess.run(
            [gxx, *GXX_FLAGS, "-o", str(out), str(folder / "wrapper.cpp")],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            msg = (
                "generated CUDA kernel failed to compile with g++:\n"
                f"{proc.stderr}\n{numbered(source)}"
            )
            raise KernelCompileError(msg)
        tmp_target = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(out, tmp_target)
        os.replace(tmp_target, target)


class HostRuntime(Runtime):
    """A `Runtime` that compiles kernels with g++ and emulates the launch grid on the CPU.

    ``block`` and ``max_blocks`` are small by default so that the grid-stride
    loops really wrap around (several bytes per thread) even on short inputs.
    ``budget`` (bytes) forces chunked processing as a small GPU would.
    """

    arch = "host"

    def __init__(
        self,
        *,
        block: int = 4,
        max_blocks: int = 3,
        max_reduce_blocks: int = 2,
        budget: int | None = None,
    ) -> None:
        self.block = block
        self.max_blocks = max_blocks
        self.max_reduce_blocks = max_reduce_blocks
        self.budget = budget
        self.launches = 0

    def load(self, kernel: CudaKernelSource) -> Any:
        """See `Runtime.load`."""
        return getattr(compile_host(kernel), f"cb_host_{kernel.name}")

    def launch(
        self, handle: Any, kernel: CudaKernelSource, grid: int, block: int, args: list[Any]
    ) -> None:
        """See `Runtime.launch`."""
        keep: list[Any] = []
        for (ct, _), arg in zip(kernel.params, args, strict=True):
            if ct.endswith("*"):
                keep.append(ctypes.c_void_p(arg.ctypes.data if arg.size else 0))
            else:
                keep.append(_CTYPES[ct](arg.item() if isinstance(arg, np.generic) else arg))
        pointers = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(k) for k in keep])
        handle.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]
        handle(grid, block, pointers)
        self.launches += 1

    def input(self, host: np.ndarray[Any, Any]) -> Any:
        """See `Runtime.input`."""
        # an exact-size private copy, as a device copy would be
        return np.array(host, copy=True)

    def zeros(self, count: int, dtype: Any) -> Any:
        """See `Runtime.zeros`."""
        return np.zeros(count, dtype=dtype)

    def output(self, nbytes: int) -> Any:
        """See `Runtime.output`."""
        return np.full(nbytes, POISON, dtype=np.uint8)

    def to_numpy(self, array: Any) -> np.ndarray[Any, Any]:
        """See `Runtime.to_numpy`."""
        return array  # type: ignore[no-any-return]

    def into_arrow(self, array: Any, whole: bool) -> pa.Buffer | None:
        """See `Runtime.into_arrow`."""
        return pa.py_buffer(array) if whole else None

    def budget_bytes(self) -> int | None:
        """See `Runtime.budget_bytes`."""
        return self.budget


def compute_on_host(lazy_frame: Any, runtime: HostRuntime | None = None) -> Any:
    """Compute a `colbridge.LazyFrame` with the CUDA backend's code, kernels run by `HostRuntime`.

    Returns a frame of the input's kind, as ``compute()`` does.
    """
    from colbridge.columns.frames import adapt_frame
    from colbridge.lazy import ComputeReport

    runtime = runtime if runtime is not None else HostRuntime()
    report = ComputeReport()
    adapter = adapt_frame(lazy_frame.frame)
    with use_runtime(runtime):
        result = lazy_frame._run(adapter, report, "cuda")
    lazy_frame.last_report = report
    return result
