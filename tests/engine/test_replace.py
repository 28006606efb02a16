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
        ("c", ("a", False)), ("c", ("c", 2)), ("c", (1, "b")),  # a categorical takes strings
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

    assert_frame_equal(steps(cb, cb.lazy(pl.scan_parquet(path), batch_rows=37)).compute(),
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


# -- replace_strict ---------------------------------------------------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KEY_KINDS),
    n=st.sampled_from([1, 9, 200]),
    seed=st.integers(0, 2**31 - 1),
    distinct=st.sampled_from([2, 5]),
    nulls=st.sampled_from([0.0, 0.3]),
    default=st.sampled_from(["none", "value", "expression"]),
    new_kind=st.sampled_from(["ints", "floats", "strings", "one int"]),
    complete=st.booleans(),
)
def test_strict_equal_polars(kind: str, n: int, seed: int, distinct: int, nulls: float,
                             default: str, new_kind: str, complete: bool) -> None:  # fmt: skip
    table = frame(n, seed, ("int8", kind), groups=distinct, key_nulls=nulls)
    assume(not pa.types.is_null(getattr(table.schema.field("h").type, "value_type", pa.int8())))
    rng = np.random.default_rng(seed)
    old = _values(table, "h", rng, 64)
    if not complete:
        old = old[: max(1, len(old) // 2)]
    assume(old)
    if new_kind == "one int":
        new: Any = 7
    else:
        new = [{"ints": i * 10 - 5, "floats": i / 4, "strings": f"v{i}"}[new_kind]
               for i in range(len(old))]  # fmt: skip
    defaults = {"value": {"ints": -1, "floats": 0.5, "strings": "?", "one int": 0}[new_kind]}

    def steps(m: Any, q: Any) -> Any:
        options: dict[str, Any] = {}
        if default == "value":
            options["default"] = defaults["value"]
        elif default == "expression":  # a column of the new values' type (a literal string)
            options["default"] = {"strings": m.lit("d"), "floats": m.col("i").cast(pl.Float64)
                                  }.get(new_kind, m.col("i").cast(pl.Int64))  # fmt: skip
        return q.select(r=m.col("h").replace_strict(old, new, **options))

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize(
    ("column", "args", "options"),
    [
        ("i", ({1: 10, 2: 20, 3: 30},), {}), ("i", ({1: 10, 2: 20},), {}),
        ("i", ({1: 10, 2: 20},), {"default": -1}), ("i", ({1: "a", 2: "b", 3: "c"},), {}),
        ("i", ({1: 1.5, 2: 2.0, 3: 3.0},), {}),
        ("i", ({1: 10, 2: 20, 3: 30},), {"return_dtype": "int8"}),
        ("s", ({"a": 1, "b": 2, "c": 3},), {}), ("s", ({"a": 1},), {"default": 0}),
        ("i", ({None: 0, 1: 1, 2: 2, 3: 3},), {}),
        ("i", ({1: None, 2: None, 3: None},), {"return_dtype": "int8"}),
        ("i", ({1: 10},), {"default": 1.5}), ("i", ({1: True, 2: False, 3: True},), {"default": 5}),
        ("i", ([], []), {"default": 7}), ("i", ([], []), {}),
        ("s", ({"a": dt.date(2020, 1, 1), "b": dt.date(2021, 1, 1),
                "c": dt.date(2022, 1, 1)},), {}),
        ("i", ({1: 2**63, 2: 1, 3: 1},), {}),
        ("i", ({1: 1000, 2: 2, 3: 3},), {"return_dtype": "int8"}),
        ("i", ({1: 1000},), {"default": 0, "return_dtype": "int8"}),
        ("i", ({1: 1, 2: 2, 3: 3},), {"return_dtype": "float32"}),
        ("i", ([1, 2, 3], 9), {}), ("i", ([1, 2, 3], [1.5, 2.5, 3.5]), {}),
        ("f", ({NAN: 1, 1.0: 2, 0.0: 3, 2.0: 4},), {}),
        ("c", ({"a": "x", "b": "y", "c": "z"},), {}), ("b", ({True: "yes", False: "no"},), {}),
        ("i", ({1: 10, 2: 20, 3: 30},), {"return_dtype": "string"}),
        ("i", ([1, 2, 3], [1, 2.5, None]), {}),
        ("c", ({-1: "x", 1: "y"},), {"default": "z"}),  # a categorical's keys are strings
        ("i", (1, "a"), {"default": "z", "return_dtype": "bool"}),  # no string -> Boolean
        ("s", ({"a": "true", "b": "false"},), {"default": "x", "return_dtype": "bool"}),
    ],
    ids=repr,
)  # fmt: skip
def test_strict_types_and_refusals_as_polars(column: str, args: tuple[Any, ...],
                                             options: dict[str, Any]) -> None:  # fmt: skip
    df = pl.DataFrame({
        "i": [1, 2, 3, None, 2], "s": ["a", "b", "c", None, "a"],
        "f": [1.0, NAN, -0.0, None, 2.0], "b": [True, False, None, True, True],
    }).with_columns(c=pl.col("s").cast(pl.Categorical))  # fmt: skip
    names = {"int8": pl.Int8, "float32": pl.Float32, "string": pl.String, "bool": pl.Boolean}
    polars_options = {k: names.get(v, v) if k == "return_dtype" else v for k, v in options.items()}
    try:
        want = df.select(y=pl.col(column).replace_strict(*args, **polars_options))
    except Exception:  # any polars error: colbridge must refuse too
        with pytest.raises(ColbridgeError):
            df.gpu.select(y=cb.col(column).replace_strict(*args, **options)).compute()
        return
    got = df.gpu.select(y=cb.col(column).replace_strict(*args, **options)).compute()
    assert got.schema == want.schema
    assert got.equals(want)


def test_strict_incomplete_mapping_is_an_error_on_the_rows_kept() -> None:
    df = pl.DataFrame({"s": ["lo", "hi", None, "mid", "lo"], "x": [1, 2, 3, 4, 5]})
    with pytest.raises(InvalidOperationError, match=r"incomplete mapping .*pass a `default`"):
        df.gpu.select(cb.col("s").replace_strict({"lo": 0, "hi": 1})).compute()
    # rows a filter drops are not mapped (polars filters first, too)
    kept = df.gpu.filter(cb.col("s") != "mid").select(cb.col("s").replace_strict(
        {"lo": 0, "hi": 1})).compute()  # fmt: skip
    assert kept["s"].to_list() == [0, 1, 0]
    got = df.gpu.select(cb.col("s").replace_strict({"lo": 0}, default=cb.col("x"))).compute()
    assert got["s"].to_list() == [0, 2, 3, 4, 0]
    got = cb.lazy(df).eval("a = replace_strict(s, ['lo', 'hi', 'mid'], [0, 1, 2])\n"
                           "b = s.replace_strict('lo', 1, default=x)").compute()  # fmt: skip
    assert got["a"].to_list() == [0, 1, None, 2, 0]
    assert got["b"].to_list() == [1, 2, 3, 4, 1]


def test_strict_on_the_cuda_code_path() -> None:
    t = pa.table({"s": ["lo", "hi", None, "lo"] * 500, "x": np.arange(2_000.0)})
    q = cb.lazy(t).select(a=cb.col("s").replace_strict({"lo": 0, "hi": 1}),
                          b=cb.col("s").replace_strict({"lo": "L"}, default="?"),
                          c=cb.col("x").replace_strict([0.0, 1.0], [1, 2], default=0))  # fmt: skip
    assert_frame_equal(pl.from_arrow(compute_on_host(q)), pl.from_arrow(q.compute(device="cpu")))
    bad = cb.lazy(pa.table({"s": ["lo", "zz"] * 500})).select(cb.col("s").replace_strict(
        {"lo": 0}))  # fmt: skip
    with pytest.raises(InvalidOperationError, match="incomplete mapping"):
        compute_on_host(bad)


@pytest.mark.parametrize("column", ["s", "c"])
def test_strict_many_strings_to_numbers(column: str, tmp_path: Any) -> None:
    """More pairs than a kernel compares: a string column maps them by its dictionary."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(300)]
    df = pl.DataFrame({"s": rng.choice(np.array([*words, None], object), 3_000)}).with_columns(
        c=pl.col("s").cast(pl.Categorical))  # fmt: skip
    codes, halves = list(range(300)), [i / 2 for i in range(300)]
    cases: list[tuple[list[str], list[Any], dict[str, Any]]] = [
        (words, codes, {}), (words[:150], halves[:150], {"default": None}),
        (words[::-1], [i % 3 == 0 for i in codes], {}), (words[:200], codes[:200], {"default": -1}),
    ]  # fmt: skip
    for old, new, options in cases:
        want = df.select(r=pl.col(column).replace_strict(old, new, **options))
        got = df.gpu.select(r=cb.col(column).replace_strict(old, new, **options)).compute()
        assert_frame_equal(got, want)
        q = cb.lazy(df.to_arrow()).select(r=cb.col(column).replace_strict(old, new, **options))
        assert_frame_equal(pl.from_arrow(compute_on_host(q)), want)
    with pytest.raises(InvalidOperationError, match="incomplete mapping"):
        df.gpu.select(cb.col(column).replace_strict(words[:150], codes[:150])).compute()
    path = tmp_path / "w.parquet"  # batches with dictionaries of their own
    df.write_parquet(path, row_group_size=700)
    want = df.select(r=pl.col(column).replace_strict(words, codes))
    got = cb.lazy(pl.scan_parquet(path), batch_rows=700).select(
        r=cb.col(column).replace_strict(words, codes)).compute()  # fmt: skip
    assert_frame_equal(got, want)
