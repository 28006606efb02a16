"""Testing: run generated CUDA kernels on the CPU, without a GPU, by compiling them with g++.

Stage: testing (a stand-in `Runtime` for `colbridge.backends.cuda`). The very
same kernel text NVRTC compiles is compiled with g++ (``-ffp-contract=off
-fno-fast-math``) together with ``cuda_host.h``, a header that stands in for
the CUDA built-ins. A launch runs the blocks one after another and the threads
of a block at the same time on real OS threads: atomics are real atomics, warp
primitives (``__ballot_sync``, ``__shfl_*_sync``, ``__syncwarp``) and
``__syncthreads`` really wait for the other lanes, and misuse that CUDA leaves
undefined (a lane that returned while its warp waits for it, lanes of one warp
in different primitives, a block that is not a whole number of warps) raises
`KernelFault` instead of computing something.

Every buffer a `HostRuntime` hands out has guard bytes before and after it,
checked after each launch: a kernel writing one byte past the end of any
output raises `KernelFault`. Outputs are filled with a poison byte, so a byte
a kernel forgets to write shows up as a wrong answer instead of a lucky zero.

``sanitize="address"`` or ``"thread"`` (or ``COLBRIDGE_HOST_SANITIZE``) builds
each kernel as a small stand-alone program with AddressSanitizer or
ThreadSanitizer and runs every launch in that program, in a subprocess: every
buffer is an exact-size heap block there, so ASan reports a read past the end
of an input as well as a write past the end of an output, and TSan reports a
plain ``+=`` on memory several threads update where an ``atomicAdd`` is needed.
A sanitizer report raises `KernelFault` with the report.

Compiled kernels are cached by source hash in ``<colbridge cache>/cuda_host``. The
runtime half of ``cuda_host.h`` (the launch and its threads, barriers, warp primitives) is
compiled there once per header text and flags into an object each kernel's library links,
next to the header precompiled: a kernel's build then compiles only the kernel.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from colbridge.backends.cuda import Runtime, numbered, use_runtime
from colbridge.backends.kernel_cache import cache_dir
from colbridge.errors import KernelCompileError

__all__ = [
    "GUARD_BYTES",
    "GXX_FLAGS",
    "HEADER",
    "KERNEL_TIERS",
    "SANITIZERS",
    "HostKernel",
    "HostRuntime",
    "KernelFault",
    "compile_host",
    "compute_on_host",
    "compute_on_tier",
    "sanitizer_works",
    "uses_warp_primitives",
]

#: The stand-in header for the CUDA built-ins.
HEADER = Path(__file__).with_name("cuda_host.h")
#: g++ flags every build shares: no contraction into FMA, no fast math, so float results
#: match the CPU backend bit for bit.
GXX_FLAGS: tuple[str, ...] = ("-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-pthread", "-w")
#: Extra flags of each kind of build: an in-process shared library, or a sanitized program.
_BUILD_FLAGS: dict[str, tuple[str, ...]] = {
    "": ("-O2", "-shared", "-fPIC"),
    "address": ("-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"),
    "thread": ("-O1", "-g", "-fsanitize=thread"),
}
#: The sanitizers a `HostRuntime` can run kernels under.
SANITIZERS: tuple[str, ...] = ("address", "thread")
#: Byte written into every output before a launch.
POISON = 0xA5
#: Bytes of guard before and after every buffer (a multiple of 16 keeps the alignment).
GUARD_BYTES = 64
_GUARD = 0xFD
#: Room for the message a launch reports.
_ERROR_SIZE = 4096

_WARP_PRIMITIVE = re.compile(
    r"\b(__ballot_sync|__any_sync|__all_sync|__syncwarp|__shfl(?:_up|_down|_xor)?_sync)\b"
)
_KERNEL_SIGNATURE = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+([A-Za-z_]\w*)\s*\(([^)]*)\)', re.S
)

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}

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


class KernelFault(AssertionError):
    """A kernel run on the host misbehaved.

    A guard byte was overwritten, a sanitizer reported, or a warp primitive or
    barrier was used in a way CUDA leaves undefined.
    """


class KernelText(Protocol):
    """What the shim needs of a kernel: its name, its CUDA C text and its parameters."""

    @property
    def name(self) -> str:
        """The ``extern "C" __global__`` function to launch."""

    @property
    def source(self) -> str:
        """The complete CUDA C text."""

    @property
    def params(self) -> list[tuple[str, str]]:
        """(C type, name) of each parameter, in order."""


@dataclass(frozen=True)
class HostKernel:
    """A hand-written CUDA C kernel for the shim (the backend's kernels bring their own)."""

    name: str
    source: str
    params: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def from_source(cls, source: str, name: str | None = None) -> HostKernel:
        """Read the kernel's name and parameter list from its ``extern "C" __global__`` line.

        Parameter types are written as the generated kernels write them (``const double*
        __restrict__ x``, ``long long n``).
        """
        for found, text in _KERNEL_SIGNATURE.findall(source):
            if name is None or found == name:
                params = []
                for part in filter(None, (p.strip() for p in text.split(","))):
                    words = part.replace("*", " * ").split()
                    pname = words[-1]
                    kept = [w for w in words[:-1] if w not in ("__restrict__", "const")]
                    ctype = " ".join(w for w in kept if w != "*")
                    if "*" in kept:
                        ctype = f"{ctype}*"
                    params.append((ctype, pname))
                return cls(found, source, params)
        msg = f'no `extern "C" __global__ void {name or "<name>"}(...)` in the kernel text'
        raise ValueError(msg)


def uses_warp_primitives(source: str) -> bool:
    """True when the kernel text calls a warp primitive (ballot, shuffle, syncwarp, any/all)."""
    return _WARP_PRIMITIVE.search(source) is not None


#: The translation unit of the runtime object shared libraries link (see `_runtime`).
_RUNTIME_SOURCE = f'#define CB_HOST_RUNTIME_IMPL\n#include "{HEADER.name}"\n'
#: Flags of the runtime object and the precompiled header: a library's, less ``-shared``.
_RUNTIME_FLAGS = (*GXX_FLAGS, *(f for f in _BUILD_FLAGS[""] if f != "-shared"))


@functools.cache
def _compiler() -> str:
    """The g++ the builds use and its version: a new compiler must not load old builds.

    (A precompiled header or a runtime object from another g++ is refused or, worse,
    linked against another ABI; the cache folder outlives compiler upgrades.)
    """
    gxx = _gxx()
    proc = subprocess.run([gxx, "--version"], capture_output=True, text=True, check=False)
    return f"{os.path.realpath(gxx)}\0{proc.stdout}"


def _runtime_digest(header: str) -> str:
    key = "\0".join((_compiler(), header, _RUNTIME_SOURCE, *_RUNTIME_FLAGS))
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def _digest(kernel: KernelText, sanitize: str, wrapper: str) -> str:
    header = HEADER.read_text()
    flags = (*GXX_FLAGS, *_BUILD_FLAGS[sanitize])
    runtime = "" if sanitize else _runtime_digest(header)
    key = "\0".join((_compiler(), header, runtime, kernel.source, wrapper, *flags))
    return hashlib.sha256(key.encode()).hexdigest()[:40]


def compile_host(kernel: KernelText, sanitize: str = "") -> Any:
    """The kernel built with g++.

    A loaded shared library exporting ``cb_host_<name>`` for every kernel of the text
    (the kernels of one program are built together), or, with ``sanitize``
    (``"address"``/``"thread"``), the path of a sanitized stand-alone program.
    """
    if sanitize not in _BUILD_FLAGS:
        msg = f"unknown sanitizer {sanitize!r}; use one of {SANITIZERS} or ''"
        raise ValueError(msg)
    if sanitize:  # a stand-alone program: the runtime compiles with the kernel
        wrapper = f'#define CB_HOST_RUNTIME_IMPL\n#include "{HEADER.name}"\n'
        wrapper += f'#include "kernel.cu"\nCB_HOST_MAIN({kernel.name})\n'
    else:  # one library per text, with an entry for each of its kernels: one g++ run
        entries = "".join(f"CB_HOST_ENTRY({name})\n" for name in _kernel_names(kernel))
        wrapper = f'#include "{HEADER.name}"\n#include "kernel.cu"\n{entries}'
    digest = _digest(kernel, sanitize, wrapper)
    with _LOCK:
        cached = _LOADED.get(digest)
        if cached is not None:
            return cached
        folder = cache_dir() / "cuda_host"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = folder / (f"k_{digest}_{sanitize}" if sanitize else f"k_{digest}.so")
        if not target.exists():
            _build(kernel.source, wrapper, target, _BUILD_FLAGS[sanitize])
        loaded: Any = target if sanitize else ctypes.CDLL(str(target))
        _LOADED[digest] = loaded
        return loaded


def _kernel_names(kernel: KernelText) -> list[str]:
    """The ``extern "C" __global__`` kernels of the text (a scan's program holds three)."""
    names = {found for found, _ in _KERNEL_SIGNATURE.findall(kernel.source)}
    return sorted(names | {kernel.name})


def _gxx() -> str:
    gxx = shutil.which("g++")
    if gxx is None:
        msg = "g++ is needed to run CUDA kernels on the host and was not found on PATH"
        raise KernelCompileError(msg)
    return gxx


def _runtime() -> Path:
    """A folder with the header, the runtime object and the precompiled header.

    The runtime (the launch: threads, locks, barriers, warp primitives) is most of what
    g++ would compile for each kernel, and reading the header (``<math.h>`` above all) most
    of the rest, so both are compiled once per header text and flags, into the cache folder,
    and every kernel's library links ``runtime.o`` and includes the header from here. g++
    takes ``cuda_host.h.gch`` in place of ``cuda_host.h`` only when the flags match and reads
    the header itself otherwise. Several processes may build it at once: each builds in a
    folder of its own and renames it into place, and the first one there wins.
    """
    header = HEADER.read_text()
    folder = cache_dir() / "cuda_host" / f"rt_{_runtime_digest(header)}"
    if folder.exists():
        return folder
    gxx = _gxx()
    with tempfile.TemporaryDirectory(prefix="cbrt_", dir=folder.parent) as tmp:
        staged = Path(tmp) / "rt"
        staged.mkdir()
        (staged / HEADER.name).write_text(header)
        (staged / "runtime.cpp").write_text(_RUNTIME_SOURCE)
        proc = subprocess.run(
            [gxx, *_RUNTIME_FLAGS, "-c", "-o", str(staged / "runtime.o"),
             str(staged / "runtime.cpp")],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            msg = f"the host shim's runtime failed to compile with g++:\n{proc.stderr}"
            raise KernelCompileError(msg)
        # optional: where g++ cannot precompile the header, each build reads it
        subprocess.run(
            [gxx, *_RUNTIME_FLAGS, "-x", "c++-header", "-o",
             str(staged / f"{HEADER.name}.gch"), str(staged / HEADER.name)],
            capture_output=True,
            check=False,
        )  # fmt: skip
        try:
            staged.rename(folder)
        except OSError:
            if not folder.exists():
                raise
    return folder


def _build(source: str, wrapper: str, target: Path, extra: tuple[str, ...]) -> None:
    gxx = _gxx()
    with tempfile.TemporaryDirectory(prefix="cbhost_") as tmp:
        folder = Path(tmp)
        (folder / "kernel.cu").write_text(source)
        (folder / "wrapper.cpp").write_text(wrapper)
        inputs = [str(folder / "wrapper.cpp")]
        if "-shared" in extra:
            runtime = _runtime()
            inputs += ["-I", str(runtime), str(runtime / "runtime.o")]
        else:
            (folder / HEADER.name).write_text(HEADER.read_text())
        out = folder / "k.out"
        proc = subprocess.run(
            [gxx, *GXX_FLAGS, *extra, "-o", str(out), *inputs],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            msg = (
                "CUDA kernel failed to compile with g++ for the host:\n"
                f"{proc.stderr}\n{numbered(source)}"
            )
            raise KernelCompileError(msg)
        tmp_target = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(out, tmp_target)
        os.chmod(tmp_target, 0o700)
        os.replace(tmp_target, target)


# the probe checks the toolchain only: each thread writes its own slot (no shim atomics,
# so a broken shim still fails the tests that check it instead of skipping them)
_SANITIZER_PROBE = HostKernel.from_source(
    'extern "C" __global__ void probe(int* x) { x[threadIdx.x] = (int)threadIdx.x + 1; }\n'
)
_SANITIZER_OK: dict[str, bool] = {}


def sanitizer_works(sanitize: str) -> bool:
    """Whether this machine's g++ builds and runs programs with the sanitizer (checked once)."""
    if sanitize not in _SANITIZER_OK:
        try:
            runtime = HostRuntime(sanitize=sanitize)
            x = runtime.zeros(32, np.int32)
            runtime.launch(runtime.load(_SANITIZER_PROBE), _SANITIZER_PROBE, 1, 32, [x])
            _SANITIZER_OK[sanitize] = x.tolist() == list(range(1, 33))
        except (KernelCompileError, KernelFault, OSError):
            _SANITIZER_OK[sanitize] = False
    return _SANITIZER_OK[sanitize]


def _sanitizer_env(sanitize: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    # leak checking needs ptrace rights some sandboxes lack, and the program frees everything
    env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:exitcode=86"
    env["TSAN_OPTIONS"] = "halt_on_error=1:exitcode=66:second_deadlock_stack=1"
    return env


class HostRuntime(Runtime):
    """A `Runtime` that compiles kernels with g++ and runs the launch grid on CPU threads.

    The default shape, 2 warps per block and at most 2 blocks, keeps grid-stride
    loops wrapping around on inputs of a few hundred rows, and blocks are whole
    warps as warp primitives need. ``budget`` (bytes) forces chunked processing
    as a small GPU would. ``sanitize`` runs every launch under a sanitizer (see
    the module docstring); it defaults to ``$COLBRIDGE_HOST_SANITIZE``.
    """

    arch = "host"

    def __init__(
        self,
        *,
        block: int = 64,
        max_blocks: int = 2,
        max_reduce_blocks: int = 2,
        budget: int | None = None,
        sanitize: str | None = None,
    ) -> None:
        if block < 1 or max_blocks < 1 or max_reduce_blocks < 1:
            msg = f"block ({block}), max_blocks and max_reduce_blocks must be at least 1"
            raise ValueError(msg)
        chosen = os.environ.get("COLBRIDGE_HOST_SANITIZE", "") if sanitize is None else sanitize
        if chosen not in ("", *SANITIZERS):
            msg = f"unknown sanitizer {chosen!r}; use one of {SANITIZERS} or ''"
            raise ValueError(msg)
        self.block = block
        self.max_blocks = max_blocks
        self.max_reduce_blocks = max_reduce_blocks
        self.budget = budget
        self.sanitize = chosen
        # the backend caches loaded kernels by runtime class and architecture: a sanitized
        # program and an in-process library of the same kernel must not share an entry
        self.arch = f"host-{chosen}" if chosen else "host"
        self.launches = 0
        # address of every buffer handed out -> (the allocation with its guards, its size)
        self._guarded: dict[int, tuple[np.ndarray[Any, Any], int]] = {}

    # -- memory ------------------------------------------------------------------------
    def _allocate(self, nbytes: int, fill: int) -> np.ndarray[Any, Any]:
        whole = np.full(nbytes + 2 * GUARD_BYTES, _GUARD, dtype=np.uint8)
        view = whole[GUARD_BYTES : GUARD_BYTES + nbytes]
        view[:] = fill
        self._guarded[view.ctypes.data] = (whole, nbytes)
        return view

    def input(self, host: np.ndarray[Any, Any]) -> Any:
        """See `Runtime.input`: an exact-size private copy between guard bytes."""
        src = np.ascontiguousarray(host)
        out = self._allocate(src.nbytes, 0)
        out[:] = src.reshape(-1).view(np.uint8)
        return out.view(src.dtype).reshape(src.shape)

    def zeros(self, count: int, dtype: Any) -> Any:
        """See `Runtime.zeros`."""
        dt = np.dtype(dtype)
        return self._allocate(count * dt.itemsize, 0).view(dt)

    def output(self, nbytes: int) -> Any:
        """See `Runtime.output`: poisoned, between guard bytes."""
        return self._allocate(nbytes, POISON)

    def to_numpy(self, array: Any) -> np.ndarray[Any, Any]:
        """See `Runtime.to_numpy`."""
        return array  # type: ignore[no-any-return]

    def into_arrow(self, array: Any, whole: bool) -> pa.Buffer | None:
        """See `Runtime.into_arrow`."""
        return pa.py_buffer(array) if whole else None

    def budget_bytes(self) -> int | None:
        """See `Runtime.budget_bytes`."""
        return self.budget

    def close(self) -> None:
        """See `Runtime.close`: forget the guard records (the buffers live on in results)."""
        self._guarded.clear()

    # -- kernels -----------------------------------------------------------------------
    def load(self, kernel: KernelText) -> Any:
        """See `Runtime.load`."""
        built = compile_host(kernel, self.sanitize)
        if self.sanitize:
            return built
        return getattr(built, f"cb_host_{kernel.name}")

    def launch(
        self, handle: Any, kernel: KernelText, grid: int, block: int, args: list[Any]
    ) -> None:
        """See `Runtime.launch`; raises `KernelFault` when the kernel misbehaved."""
        if len(args) != len(kernel.params):
            msg = f"kernel `{kernel.name}` takes {len(kernel.params)} arguments, got {len(args)}"
            raise ValueError(msg)
        if block % 32 and uses_warp_primitives(kernel.source):
            msg = (
                f"kernel `{kernel.name}` uses warp primitives but the launch has blocks of "
                f"{block} threads; blocks must be a whole number of warps (a multiple of 32)"
            )
            raise ValueError(msg)
        if self.sanitize:
            report = self._launch_program(handle, kernel, grid, block, args)
        else:
            report = self._launch_library(handle, kernel, grid, block, args)
        self.launches += 1
        problems = [report] if report else []
        problems += self._check_guards(kernel, args)
        if problems:
            msg = f"kernel `{kernel.name}` on {grid} block(s) of {block}: " + "\n".join(problems)
            raise KernelFault(msg)

    def _launch_library(
        self, handle: Any, kernel: KernelText, grid: int, block: int, args: list[Any]
    ) -> str:
        keep: list[Any] = []
        for (ct, _), arg in zip(kernel.params, args, strict=True):
            if ct.endswith("*"):
                keep.append(ctypes.c_void_p(arg.ctypes.data))
            else:
                keep.append(_CTYPES[ct](arg.item() if isinstance(arg, np.generic) else arg))
        pointers = (ctypes.c_void_p * max(len(keep), 1))(*[ctypes.addressof(k) for k in keep])
        error = ctypes.create_string_buffer(_ERROR_SIZE)
        handle.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_char_p,
                           ctypes.c_size_t]  # fmt: skip
        handle.restype = ctypes.c_int
        if handle(grid, block, pointers, error, _ERROR_SIZE):
            return error.value.decode(errors="replace")
        return ""

    def _launch_program(
        self, program: Path, kernel: KernelText, grid: int, block: int, args: list[Any]
    ) -> str:
        pointers: list[np.ndarray[Any, Any]] = []
        with tempfile.TemporaryDirectory(prefix="cbsan_") as tmp:
            arg_file, out_file = Path(tmp) / "args", Path(tmp) / "out"
            with open(arg_file, "wb") as fh:
                for (ct, _), arg in zip(kernel.params, args, strict=True):
                    if ct.endswith("*"):
                        data = np.ascontiguousarray(arg).reshape(-1).view(np.uint8)
                        fh.write(struct.pack("<Q", data.size))
                        fh.write(data.tobytes())
                        pointers.append(arg)
                    else:
                        value = arg.item() if isinstance(arg, np.generic) else arg
                        raw = bytes(_CTYPES[ct](value))
                        fh.write(raw.ljust(8, b"\0"))
            proc = subprocess.run(
                [str(program), str(grid), str(block), str(arg_file), str(out_file)],
                capture_output=True,
                text=True,
                env=_sanitizer_env(self.sanitize),
                timeout=300,
                check=False,
            )
            if out_file.exists():
                raw_out = out_file.read_bytes()
                at = 0
                for arg in pointers:
                    (size,) = struct.unpack_from("<Q", raw_out, at)
                    at += 8
                    target = arg.reshape(-1).view(np.uint8)
                    target[:] = np.frombuffer(raw_out, dtype=np.uint8, count=size, offset=at)
                    at += size
        if proc.returncode == 0:
            return ""
        what = "misuse" if proc.returncode == 3 else f"{self.sanitize} sanitizer report"
        return f"{what} (exit status {proc.returncode}):\n{proc.stderr[:6000]}"

    def _check_guards(self, kernel: KernelText, args: list[Any]) -> list[str]:
        problems = []
        for (_, name), arg in zip(kernel.params, args, strict=True):
            if not isinstance(arg, np.ndarray):
                continue
            record = self._guarded.get(arg.ctypes.data)
            if record is None:
                continue
            whole, nbytes = record
            before = np.flatnonzero(whole[:GUARD_BYTES] != _GUARD)
            after = np.flatnonzero(whole[GUARD_BYTES + nbytes :] != _GUARD)
            if before.size:
                problems.append(
                    f"`{name}` ({nbytes} bytes): bytes written before its start, at offsets "
                    f"{(before - GUARD_BYTES).tolist()}"
                )
            if after.size:
                problems.append(
                    f"`{name}` ({nbytes} bytes): bytes written past its end, at offsets "
                    f"{(after + nbytes).tolist()}"
                )
            whole[:GUARD_BYTES] = _GUARD  # one report per overrun
            whole[GUARD_BYTES + nbytes :] = _GUARD
        return problems


#: Where the tests run a plan's kernels: the CPU backend's two tiers (NumPy, compiled
#: numba), and the CUDA backend's kernel text compiled for the host (`compute_on_host`).
KERNEL_TIERS = ("numpy", "compiled", "cuda host")


def compute_on_tier(lazy_frame: Any, tier: str) -> Any:
    """Compute a `colbridge.LazyFrame` with the kernels of one of `KERNEL_TIERS`.

    The CPU tier is chosen by ``COLBRIDGE_CPU_TIER`` for this call only (the CUDA
    backend's host passes run on the compiled tier). Returns a frame of the input's
    kind, as ``compute()`` does.
    """
    if tier not in KERNEL_TIERS:
        msg = f"unknown kernel tier {tier!r}: expected one of {', '.join(KERNEL_TIERS)}"
        raise ValueError(msg)
    before = os.environ.get("COLBRIDGE_CPU_TIER")
    os.environ["COLBRIDGE_CPU_TIER"] = "compiled" if tier == "cuda host" else tier
    try:
        if tier == "cuda host":
            return compute_on_host(lazy_frame)
        return lazy_frame.compute(device="cpu")
    finally:
        if before is None:
            del os.environ["COLBRIDGE_CPU_TIER"]
        else:
            os.environ["COLBRIDGE_CPU_TIER"] = before


def compute_on_host(lazy_frame: Any, runtime: HostRuntime | None = None) -> Any:
    """Compute a `colbridge.LazyFrame` with the CUDA backend's code, kernels run by `HostRuntime`.

    Returns a frame of the input's kind, as ``compute()`` does.
    """
    from colbridge.columns.frames import adapt_frame
    from colbridge.runtime.execute import ComputeReport

    runtime = runtime if runtime is not None else HostRuntime()
    report = ComputeReport()
    adapter = adapt_frame(lazy_frame.frame)
    with use_runtime(runtime):
        result = lazy_frame._run(adapter, report, "cuda")
    lazy_frame.last_report = report
    return result
