"""``replace(old, new)`` against polars.

Values drawn from the column itself (and a few it lacks), of every type the
grouping knows (numbers with NaN and ``-0.0``, booleans, strings, categoricals,
dates, datetimes, durations), nulls replaced and made, scalars, lists and
mappings, values cast as polars casts them (and refused where polars refuses
them), slices, chunks, empty frames, the three frame kinds, both CPU tiers,
inside other expressions and ``over``, the string language, a stream, and the
CUDA code path (on the host).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColbridgeError, InvalidOperationError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.grouped.grouped_data import KEY_KINDS, frame


def _values(table: pa.Table, column: str, rng: np.random.Generator, k: int) -> list[Any]:
    """``k`` distinct values of the column (None among them when it has nulls)."""
    pool: list[Any] = []
    for v in table.column(column).to_pylist():
        is_nan = isinstance(v, float) and v != v
        if not any(w is v or w == v or (is_nan and isinstance(w, float) and w != w)
                   for w in pool):  # fmt: skip
            pool.append(v)
    rng.shuffle(pool)  # type: ignore[arg-type]
    return pool[:k]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KEY_KINDS),
    n=st.sampled_from([0, 1, 9, 200]),
    seed=st.integers(0, 2**31 - 1),
    distinct=st.sampled_from([2, 5, 30]),
    nulls=st.sampled_from([0.0, 0.3]),
    k=st.sampled_from([1, 2, 4]),
    form=st.sampled_from(["lists", "mapping", "one new"]),
    offset=st.sampled_from([0, 3]),
    chunks=st.sampled_from([1, 3]),
)
def test_equal_polars(kind: str, n: int, seed: int, distinct: int, nulls: float, k: int,
                      form: str, offset: int, chunks: int) -> None:  # fmt: skip
    table = frame(n, seed, ("int8", kind, kind), groups=distinct, key_nulls=nulls,
                  offset=offset, chunks=chunks)  # fmt: skip
    # categories of which no row holds one are typed null by the helper (no category type)
    assume(not any(pa.types.is_null(getattr(table.schema.field(c).type, "value_type", pa.int8()))
                   for c in ("h", "k")))  # fmt: skip
    rng = np.random.default_rng(seed)
    old = _values(table, "h", rng, k)
    assume(old)
    new = _values(table, "k", rng, len(old))
    new += [None] * (len(old) - len(new))

    def steps(m: Any, q: Any) -> Any:
        h = m.col("h")
        if form == "mapping":
            replaced = h.replace(dict(zip(old, new, strict=True)))
        elif form == "one new":
            replaced = h.replace(old, new[0])
        else:
            replaced = h.replace(old, new)
        return q.select(r=replaced, o=h.replace(old[:1], new[:1]).over("g"),
                        e=replaced.is_null())  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind_and_tier(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = frame(3_000, 7, ("int8", "int64", "string"), groups=5, key_nulls=0.2)
    codes = pl.from_arrow(table)["h"].drop_nulls().unique().sort().to_list()[:3]
    words = pl.from_arrow(table)["k"].drop_nulls().unique().sort().to_list()[:2]

    def steps(m: Any, q: Any) -> Any:
        return q.with_columns(
            a=m.col("h").replace(codes, [0, 1, 2][: len(codes)]) * 2,
            b=m.col("k").replace({words[0]: "first", None: "none"}),
            c=m.col("k").replace(words, "one") == "one",
        )

    assert_same_as_polars(table, steps)


NAN = float("nan")


@pytest.mark.parametrize(
    ("column", "args"),
    [
        ("i", (2, 20)), ("i", ({2: 20, 3: 30},)), ("i", (2, 2.5)), ("i", ([1, 2], 99)),
        ("i", (2, None)), ("i", (None, 0)), ("i", (2, 300_000_000_000)), ("i", (2.5, 5)),
        ("i", ("2", 5)), ("i", (2, True)), ("i", ([1, 2], [None, 5])), ("f", (NAN, 0.0)),
        ("f", (0.0, 5.0)), ("f", (1, 5)), ("f32", (1.0, 1e300)), ("i8", (2, -1)),
        ("b", (True, False)), ("b", (True, 0)), ("b", (1, False)), ("s", ("a", "z")),
        ("s", ({"a": "z", "b": "y"},)), ("s", ("a", 1)), ("s", ({"a": None},)),
        ("s", ({None: "n"},)), ("c", ("a", "z")), ("c", ({None: "n", "a": "b"},)),
        ("d", (dt.date(2020, 1, 1), dt.date(1999, 1, 1))), ("d", ({None: dt.date(2000, 1, 1)},)),
        ("i", ({},)),
        # polars refuses these: so does colbridge
        ("i", (2, "x")), ("u", (2, -1)), ("u", (-1, 5)), ("i8", (1, 1000)), ("i", ([2, 2], [5, 6])),
    ],
    ids=repr,
)  # fmt: skip
def test_casts_and_refusals_as_polars(column: str, args: tuple[Any, ...]) -> None:
    df = pl.DataFrame({
        "i": [1, 2, 3, None, 2], "f": [1.0, 2.0, NAN, None, -0.0], "s": ["a", "b", "c", None, "a"],
        "b": [True, False, None, True, False],
        "d": [dt.date(2020, 1, 1), dt.date(2020, 1, 2), None, dt.date(2020, 1, 1),
              dt.date(2020, 1, 3)],
    }).with_columns(c=pl.col("s").cast(pl.Categorical), i8=pl.col("i").cast(pl.Int8),
                    u=pl.col("i").cast(pl.UInt32), f32=pl.col("f").cast(pl.Float32))  # fmt: skip
    try:
        want = df.select(y=pl.col(column).replace(*args))
    except Exception:  # any polars error: colbridge must refuse too
        with pytest.raises(ColbridgeError):
            df.gpu.select(y=cb.col(column).replace(*args)).compute()
        return
    got = df.gpu.select(y=cb.col(column).replace(*args)).compute()
    assert got.schema == want.schema
    assert got.equals(want)


def test_clear_errors() -> None:
    df = pl.DataFrame({"x": [1, 2], "e": ["a", "b"]}).with_columns(
        e=pl.col("e").cast(pl.Enum(["a", "b"])))
    with pytest.raises(InvalidOperationError, match="must not contain duplicates"):
        cb.col("x").replace([1, 1], [2, 3])
    with pytest.raises(ColbridgeError, match=r"2 old value.* and 3 new ones"):
        cb.col("x").replace([1, 2], [2, 3, 4])
    with pytest.raises(ColbridgeError, match="`new` is required"):
        cb.col("x").replace([1, 2])
    with pytest.raises(UnsupportedOperationError, match="not expressions"):
        cb.col("x").replace(cb.col("x").max(), 0)
    with pytest.raises(UnsupportedOperationError, match="at most 64 per row"):
        df.gpu.select(cb.col("x").replace(list(range(100)), 0)).compute()
    with pytest.raises(UnsupportedOperationError, match="on an Enum is not supported"):
        df.gpu.select(cb.col("e").replace("a", "b")).compute()
    # a string column maps any number of its strings
    words = [f"w{i}" for i in range(500)]
    s = pl.DataFrame({"s": words[::-7]})
    mapping = {w: w.upper() for w in words}
    assert_frame_equal(s.gpu.select(cb.col("s").replace(mapping)).compute(),
                       s.select(pl.col("s").replace(mapping)))  # fmt: skip


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 2, 1, 2], "x": [3, None, 1, 3], "s": ["a", "b", None, "a"]})
    got = cb.lazy(table).eval("a = replace(x, [1, 3], [10, 30])\nb = s.replace('a', 'z')\n"
                              "c = replace(x, None, 0).over(g)")  # fmt: skip
    want = pl.from_arrow(table).with_columns(
        a=pl.col("x").replace([1, 3], [10, 30]), b=pl.col("s").replace("a", "z"),
        c=pl.col("x").replace(None, 0).over("g"))  # fmt: skip
    assert pl.from_arrow(got.compute()).equals(want)


def test_a_stream_maps_every_batch(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    n = 10_000
    words = np.array(["ab", "cd", "ef", "gh"])
    table = pa.table({"s": pa.array(words[rng.integers(0, 4, n)], mask=rng.random(n) < 0.1),
                      "x": rng.integers(0, 5, n)})  # fmt: skip
    path = tmp_path / "r.parquet"
    pq.write_table(table, path, row_group_size=1_333)

    def steps(m: Any, q: Any) -> Any:
        return q.with_columns(s2=m.col("s").replace({"ab": "AB", None: "?"}),
                              x2=m.col("x").replace([0, 4], [40, None]))  # fmt: skip

    assert_frame_equal(steps(cb, pl.scan_parquet(path).gpu).compute(),
                       steps(pl, pl.read_parquet(path)))  # fmt: skip


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = frame(2_000, 9, ("int64", "float64", "string"), groups=6, key_nulls=0.2)
    values = pl.from_arrow(table)["h"].drop_nulls().unique().to_list()[:3]
    words = pl.from_arrow(table)["k"].drop_nulls().unique().to_list()[:2]
    q = cb.lazy(table).select(a=cb.col("h").replace(values, 0.5) + 1,
                              b=cb.col("k").replace(words, ["x", "y"]),
                              c=cb.col("k").replace(None, "null"))  # fmt: skip
    on_host = pl.from_arrow(compute_on_host(q))
    assert_frame_equal(on_host, pl.from_arrow(q.compute(device="cpu")))
