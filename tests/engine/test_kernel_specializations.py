"""Library kernels compile once per column type, whatever made the column's buffers.

numba compiles a kernel once per argument type, and a read-only NumPy array (an Arrow
buffer read in place) is another type than a writable one (a converted copy, or an
Arrow buffer made from a writable NumPy mask). The scan and pack kernels get every
input read-only, so a column read in place and a converted one share one compile
(each compile costs seconds on a first compute).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import colbridge as cb


def _arrays(typ: object) -> list[object]:
    """The array types in a numba type (those inside tuples too)."""
    if hasattr(typ, "mutable"):
        return [typ]
    return [a for inner in getattr(typ, "types", ()) for a in _arrays(inner)]


def _inputs_read_only(dispatcher: object, count: int) -> set[bool]:
    """Whether the arrays of the first ``count`` arguments of each compiled signature are
    writable (numba's ``mutable``)."""
    flags = set()
    for signature in dispatcher.signatures:  # type: ignore[attr-defined]
        flags |= {a.mutable for t in signature[:count] for a in _arrays(t)}  # type: ignore[attr-defined]
    return flags


def _compiles_differing_only_in_writability(dispatcher: object, count: int) -> list[object]:
    """Signatures compiled twice over: the same types, but an input array writable in one
    and read-only in the other (other tests in this process may add legitimately
    different signatures, such as a `cum_count`'s integer output)."""
    seen: dict[tuple[object, ...], object] = {}
    twice = []
    for signature in dispatcher.signatures:  # type: ignore[attr-defined]
        key = tuple(
            _as_read_only(t) if i < count else t for i, t in enumerate(signature)
        )
        if key in seen:
            twice.append((seen[key], signature))
        seen[key] = signature
    return twice


def _as_read_only(typ: object) -> object:
    from numba.core import types

    if isinstance(typ, types.Array):
        return typ.copy(readonly=True)
    if isinstance(typ, types.BaseTuple):
        return types.Tuple([_as_read_only(t) for t in typ.types])
    return typ


def test_scans_of_a_column_read_in_place_and_a_converted_one_share_a_compile() -> None:
    from colbridge.backends import _scan_kernels as k

    n = 50
    table = pa.table({
        "wide": pa.array(np.arange(n), pa.int64(), mask=np.arange(n) % 7 == 0),  # in place
        "narrow": pa.array(np.arange(n), pa.int32()),  # converted to int64 first
    })  # fmt: skip
    out = cb.lazy(table).select(
        a=cb.col("wide").cum_max(), b=cb.col("narrow").cum_max(),
        c=cb.col("wide").rolling_min(3), d=cb.col("narrow").rolling_min(3),
    ).compute()  # fmt: skip
    assert out.column("b").to_pylist() == list(range(n))
    for kernel in (k.cumulative, k.rolling_extreme):
        assert any(str(s[0].dtype) == "int64" for s in kernel.signatures)
        assert _compiles_differing_only_in_writability(kernel, 1) == []  # one for both
        assert _inputs_read_only(kernel, 1) == {False}


def test_packs_compile_once_whatever_made_the_bitmaps() -> None:
    from colbridge.columns import pack_kernels as p

    n = 5_000
    rng = np.random.default_rng(3)
    mask = rng.random(n) < 0.1
    # a bitmap pyarrow made from a NumPy mask (a writable buffer), one it computed, none
    made = pa.array(rng.random(n), mask=mask)
    computed = pa.array(rng.random(n)).filter(pa.array(~mask | True))
    plain = pa.array(rng.random(n))
    for columns in ((made, plain), (computed.cast(pa.float64()), plain)):
        table = pa.table({"x": columns[0], "y": columns[1]})
        for order in ("C", "F"):
            matrix = cb.to_tensor(table, dtype="float64", order=order, nulls=-1.0)
            want = np.column_stack([np.asarray(c.fill_null(-1.0)) for c in columns])
            assert np.array_equal(np.asarray(matrix), want)
    assert _inputs_read_only(p.pack_fill, 1) == {False}  # the tuple of columns
    assert _inputs_read_only(p.fill_column, 2) == {False}
    assert _compiles_differing_only_in_writability(p.pack_fill, 1) == []
    assert _compiles_differing_only_in_writability(p.fill_column, 2) == []
