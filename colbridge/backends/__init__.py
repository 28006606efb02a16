"""Backends: where fused kernels run. ``cpu`` always; ``cuda`` when CuPy finds a device.

Every backend module offers the same two functions (`Backend`), taking Arrow
arrays in and giving Arrow arrays out, so the runtime never depends on which
backend ran.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:  # for the annotations only: `import colbridge` loads no engine module
    import numpy as np
    import pyarrow as pa

    from colbridge.backends.common import RunStats, SegmentResult
    from colbridge.backends.groups import Grouping
    from colbridge.codegen.kernel import AggSlot
    from colbridge.plan.nullability import Nullability
    from colbridge.plan.planner import Segment

__all__ = ["Backend", "get_backend"]


class Backend(Protocol):
    """What every backend module provides."""

    def run_segment(
        self,
        segment: Segment,
        columns: Mapping[str, pa.Array],
        num_rows: int,
        stats: RunStats,
        nan_null: frozenset[str] = frozenset(),
        carry: Mapping[str, pa.Array] | None = None,
        groups: Grouping | None = None,
    ) -> SegmentResult | tuple[dict[str, pa.Array], pa.BooleanArray | None]:
        """Run one segment: its new columns and the filter mask (see `SegmentResult`).

        ``carry`` are columns whose filtered rows the backend may produce itself; a
        backend that does not (it takes no ``carry``) gives ``(new columns by name, the
        filter mask or None)``. ``groups`` holds the group ids (and host-made results)
        of the segment's grouped work, from the factorize pass.
        """
        ...

    def reduce_partials(
        self,
        segment: Segment,
        columns: Mapping[str, pa.Array],
        num_rows: int,
        stats: RunStats,
        nan_null: frozenset[str] = frozenset(),
    ) -> tuple[list[AggSlot], np.ndarray, np.ndarray, np.ndarray]:
        """The segment's last reduction pass as one folded partial row per partial array."""
        ...

    def kernel_sources(
        self, segment: Segment, nulls: Nullability, num_rows: int
    ) -> list[tuple[str, str]]:
        """(title, source) of the kernels that would run ``segment`` over ``num_rows`` rows."""
        ...

_BACKENDS = {"cpu": "colbridge.backends.cpu", "cuda": "colbridge.backends.cuda"}
#: backends whose import has finished, by target
_LOADED: dict[str, Any] = {}


def get_backend(target: str) -> Backend:
    """The backend module for ``target`` (``"cpu"`` or ``"cuda"``), imported on first use."""
    module = _LOADED.get(target)
    if module is None:
        # import_module, not a look in sys.modules first: while one thread imports the
        # module, it is in sys.modules half made, and import_module waits for it
        module = _LOADED[target] = importlib.import_module(_BACKENDS[target])
    return cast(Backend, module)
