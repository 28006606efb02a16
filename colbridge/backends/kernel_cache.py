"""Kernel cache: generated source on disk and compiled kernels in a bounded in-process LRU.

Source files on disk let numba's own cache work across processes.

In-process key layout: ``(kind, target, parallel, typed output nodes, mask node,
((input name, dtype, has validity), ...), (scalar nullability, ...))``. Typed
nodes carry every literal and implicit cast, so equal keys mean equal source.
On disk a kernel is ``<cache dir>/cbk_<sha256 of source>.py``; numba keeps its
compiled form in ``__pycache__`` beside it. The folder is created private to
the user (mode 0700); a file whose text does not hash to its name (truncated,
corrupted) is rewritten before use.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colbridge.errors import KernelCompileError

__all__ = ["CacheInfo", "KernelCache", "cache_dir", "kernel_cache"]


def cache_dir() -> Path:
    """Where generated kernels are written: ``$COLBRIDGE_CACHE_DIR``, else the user cache."""
    env = os.environ.get("COLBRIDGE_CACHE_DIR")
    if env:
        base = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg else Path.home() / ".cache"
        base = base / "colbridge" / "kernels"
    try:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):  # a shared folder we do not own: leave its mode
            os.chmod(base, 0o700)
        if not os.access(base, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable", str(base))
    except OSError as exc:
        return _fallback_dir(base, exc)
    return base


_FALLBACK: Path | None = None


def _fallback_dir(wanted: Path, exc: OSError) -> Path:
    """A private temporary folder for this process, when the cache folder is unusable."""
    global _FALLBACK
    if _FALLBACK is None:
        _FALLBACK = Path(tempfile.mkdtemp(prefix="colbridge-kernels-"))
        warnings.warn(
            f"kernel cache folder {str(wanted)!r} cannot be used ({exc.strerror or exc}); "
            f"kernels are cached in {str(_FALLBACK)!r} for this process only. "
            "Set COLBRIDGE_CACHE_DIR to a writable folder to keep them across processes.",
            RuntimeWarning,
            stacklevel=3,
        )
    return _FALLBACK


@dataclass(frozen=True)
class CacheInfo:
    """Counters of the kernel cache (see `colbridge.cache_info`)."""

    hits: int
    misses: int
    compiles: int
    size: int
    maxsize: int
    directory: str


class KernelCache:
    """Bounded LRU of compiled kernels with one compile per key, even under threads."""

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0
        self.compiles = 0
        #: one more at each `clear`: what was taken from the cache before is not reused
        self.generation = 0

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> tuple[Any, bool]:
        """The cached value for ``key`` (built once if missing), and whether it was a hit."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key], True
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._entries:  # another thread built it meanwhile
                    self.hits += 1
                    return self._entries[key], True
                self.misses += 1
            value = build()
            with self._lock:
                self.compiles += 1
                self._entries[key] = value
                while len(self._entries) > self.maxsize:
                    self._entries.popitem(last=False)
                self._key_locks.pop(key, None)
        return value, False

    def count_hit(self) -> None:
        """Count a use of a kernel taken from the cache earlier (and kept by its user)."""
        with self._lock:
            self.hits += 1

    def peek(self, key: Hashable) -> Any:
        """The cached value for ``key`` or None, counting neither a hit nor a miss."""
        with self._lock:
            return self._entries.get(key)

    def info(self) -> CacheInfo:
        """Current counters."""
        with self._lock:
            return CacheInfo(
                self.hits,
                self.misses,
                self.compiles,
                len(self._entries),
                self.maxsize,
                str(cache_dir()),
            )

    def clear(self) -> None:
        """Forget compiled kernels and reset the counters (files on disk stay)."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = self.compiles = 0
            self.generation += 1


kernel_cache = KernelCache()


def load_module_from_source(
    source: str, prefix: str = "cbk", bind: dict[str, Any] | None = None
) -> Any:
    """Write ``source`` to the cache folder (if not already there, intact) and import it.

    ``bind`` holds globals the module uses but does not define (the dispatchers of the
    user functions a kernel calls), set before its code runs. Their names carry a
    number unique in the process, so a module text is only ever shared by callers
    binding the same objects.
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:32]
    folder = cache_dir()
    path = folder / f"{prefix}_{digest}.py"
    try:
        intact = path.read_text() == source
    except (OSError, UnicodeDecodeError):
        intact = False
    if not intact:
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    name = f"colbridge_kernels.{prefix}_{digest}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        msg = f"cannot import generated kernel {path}"
        raise KernelCompileError(msg)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(bind or {})
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        numbered = "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(source.splitlines()))
        msg = f"generated kernel does not parse ({exc}); source:\n{numbered}"
        raise KernelCompileError(msg) from exc
    sys.modules[name] = module
    return module
