"""Testing: run one expression spec through colbridge and through polars (the oracle), compare.

A *spec* is a function of a module: ``lambda m: m.col("a") * 2`` builds the
expression with ``m = colbridge`` and the same expression with ``m = polars``,
since colbridge's expression API uses polars' names. Steps are given the same
way: ``lambda m, q: q.with_columns(z=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["FRAME_KINDS", "assert_same_as_polars", "to_kind"]

FRAME_KINDS = ("polars", "pyarrow", "pandas")

Steps = Callable[[Any, Any], Any]


def to_kind(table: pa.Table, kind: str) -> Any:
    """The same data as a frame of ``kind`` (pandas uses Arrow-backed columns, nulls kept)."""
    if kind == "pyarrow":
        return table
    if kind == "polars":
        import polars as pl

        return pl.from_arrow(table, rechunk=False)
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _as_polars(result: Any) -> Any:
    import polars as pl

    if isinstance(result, pa.Table):
        return pl.from_arrow(result)
    if isinstance(result, (pl.DataFrame, pl.Series)):
        return result
    import pandas as pd

    if isinstance(result, pd.Series):
        result = result.to_frame()
    return pl.from_arrow(pa.Table.from_pandas(result, preserve_index=False))


def assert_same_as_polars(
    table: pa.Table,
    steps: Steps,
    *,
    kinds: Sequence[str] = FRAME_KINDS,
    rtol: float | None = None,
    device: str = "cpu",
) -> None:
    """Check that colbridge's result equals polars' for every frame kind in ``kinds``.

    If polars raises, colbridge must raise a `ColbridgeError` too. Floats are
    compared exactly (NaN equal to NaN) unless ``rtol`` is given.
    """
    import polars as pl
    from polars.testing import assert_frame_equal

    import colbridge as cb

    try:
        source = pl.DataFrame(pl.from_arrow(table, rechunk=False))
        expected = steps(pl, source.lazy()).collect()
        polars_error: Exception | None = None
    except pl.exceptions.PolarsError as exc:
        expected, polars_error = None, exc
    for kind in kinds:
        frame = to_kind(table, kind)
        if polars_error is not None:
            try:
                steps(cb, cb.lazy(frame)).compute(device=device)
            except cb.ColbridgeError:
                continue
            msg = f"polars raised {polars_error!r} but colbridge did not ({kind} input)"
            raise AssertionError(msg)
        got = _as_polars(steps(cb, cb.lazy(frame)).compute(device=device))
        if isinstance(got, pl.Series):
            got = got.to_frame()
        try:
            if rtol is None:
                assert_frame_equal(got, expected, check_exact=True)
            else:
                assert_frame_equal(got, expected, check_exact=False, rel_tol=rtol, abs_tol=rtol)
        except AssertionError as exc:
            msg = (
                f"{kind} input: colbridge differs from polars\n{exc}\n"
                f"colbridge:\n{got}\npolars:\n{expected}"
            )
            raise AssertionError(msg) from None
