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

    The oracle is polars' lazy engine. Where it disagrees with polars' eager
    engine on the same steps (polars 2.1 types ``0.5 / f32`` as Float64 when a
    constant filter follows, Float32 otherwise), colbridge may match either.
    """
    import polars as pl

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
        mismatch = _frame_mismatch(got, expected, rtol)
        if mismatch is not None:
            eager = _eager_polars(steps, source)
            if (
                eager is not None
                and _frame_mismatch(eager, expected, rtol) is not None
                and _frame_mismatch(got, eager, rtol) is None
            ):
                continue  # polars' engines disagree with each other; colbridge matches eager
            msg = (
                f"{kind} input: colbridge differs from polars\n{mismatch}\n"
                f"colbridge:\n{got}\npolars:\n{expected}"
            )
            raise AssertionError(msg) from None


def _frame_mismatch(got: Any, expected: Any, rtol: float | None) -> AssertionError | None:
    """Polars' frame comparison as a value: the difference, or None when equal."""
    from polars.testing import assert_frame_equal

    try:
        if rtol is None:
            assert_frame_equal(got, expected, check_exact=True)
        else:
            assert_frame_equal(got, expected, check_exact=False, rel_tol=rtol, abs_tol=rtol)
    except AssertionError as exc:
        return exc
    return None


def _eager_polars(steps: Steps, source: Any) -> Any:
    """The steps run by polars' eager engine, or None when they raise there."""
    import polars as pl

    try:
        result = steps(pl, source)
    except pl.exceptions.PolarsError:
        return None
    return result if isinstance(result, pl.DataFrame) else None
