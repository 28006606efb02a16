"""Ordered expressions against polars: the arguments at their edges, the string language, errors.

``n`` of ``shift``/``diff``/``pct_change`` zero, negative and beyond the frame;
``window_size`` 1 and beyond the frame; ``min_samples`` 0, 1, at the window size
and unset; ``center`` with odd and even windows; ``ddof``; ``ewm_mean`` with each
decay parameter, ``adjust`` and ``ignore_nulls`` both ways and ``min_samples``;
``fill_null`` forward and backward with and without ``limit``. The same
functions through ``eval`` strings. Bad arguments raise a `cb.ColbridgeError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars
from tests.ordered.ordered_data import F32_TOL, F64_TOL, frame

RTOL = 1e-9  # float sums, means, variances and ewm_mean add in another order than polars


NUMBERS = ("int16", "uint32", "float32", "float64")


def table_of(n: int, seed: int, nulls: str = "runs", **kw: Any) -> pa.Table:
    return frame(n, seed=seed, dtypes=NUMBERS, nulls=nulls, **kw)


def tolerances(names: list[str]) -> dict[str, Any]:
    """`F32_TOL` for outputs of the float32 column (named ``..._float32``), else `F64_TOL`."""
    return {name: F32_TOL if name.endswith("float32") else F64_TOL for name in names}


def each_column(build: Any) -> Any:
    """Steps selecting ``build(m, col, name)`` of every NUMBERS column, as a dict of outputs."""

    def steps(m: Any, q: Any) -> Any:
        out: dict[str, Any] = {}
        for c in NUMBERS:
            for key, expr in build(m, m.col(c)).items():
                out[f"{key}_{c}"] = expr
        return q.select(**out)

    return steps


# -- n --------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3, -1, -3, 11, 12, -12, 40, -40])
def test_shift_diff_pct_change_n(n: int, tier: str) -> None:
    # the frame has 12 rows: n = ±12 and beyond shift everything out
    table = table_of(12, seed=abs(n) + 1)

    def build(m: Any, x: Any) -> dict[str, Any]:
        return {"s": x.shift(n), "sf": x.shift(n, fill_value=3), "d": x.diff(n),
                "p": x.pct_change(n)}  # fmt: skip

    steps = each_column(build)
    names = [f"{k}_{c}" for k in ("s", "sf", "d", "p") for c in NUMBERS]
    assert_same_as_polars(table, steps, tolerance=tolerances(names))


def test_shift_fill_value_types(tier: str) -> None:
    # the result takes the supertype of the column and the fill value, as in polars
    table = frame(15, seed=2, dtypes=("int8", "uint8", "float32", "bool"), nulls="random")

    def steps(m: Any, q: Any) -> Any:
        i8, u8, f32, b = m.col("int8"), m.col("uint8"), m.col("float32"), m.col("bool")
        return q.select(
            a=i8.shift(2, fill_value=100),
            b=i8.shift(2, fill_value=1000),  # beyond int8: polars widens to int16
            c=i8.shift(-1, fill_value=1.5),  # a float fill: float64
            d=u8.shift(3, fill_value=0),
            e=f32.shift(1, fill_value=2.5),
            f=f32.shift(-2, fill_value=float("nan")),
            g=b.shift(1, fill_value=False),
            h=b.shift(1, fill_value=0),  # polars: bool and int -> int32
        )

    assert_same_as_polars(table, steps)


def test_a_numpy_scalar_fill_keeps_its_type(tier: str) -> None:
    # typed as polars types it (as `x + np.int64(2)` is): np.float64(0.1) next to Float32 is
    # Float64 with 0.1 itself (it was Float32, 0.1 rounded), np.int8(3) next to UInt8 Int16
    table = frame(15, seed=4, dtypes=("int8", "uint8", "float32", "bool"), nulls="random")

    def steps(m: Any, q: Any) -> Any:
        i8, u8, f32, b = m.col("int8"), m.col("uint8"), m.col("float32"), m.col("bool")
        return q.select(
            a=f32.shift(1, fill_value=np.float64(0.1)),
            b=u8.shift(-2, fill_value=np.int8(3)),
            c=u8.shift(1, fill_value=np.int64(-7)).over("bool"),
            d=b.shift(2, fill_value=np.float32(0.5)),
            e=i8.shift(1, fill_value=np.bool_(True)),
            f=f32.shift(-1, fill_value=np.int64(-7)),
        )

    assert_same_as_polars(table, steps)


def test_shift_fill_casts_the_column_without_raising(tier: str) -> None:
    # UInt64 and a negative fill: Int64, values above its range null (as polars; a
    # `fill_null(-1)` raises instead, in both)
    table = pa.table({"x": pa.array([1, 2**64 - 1, None, 2**63, 5], pa.uint64()),
                      "g": [1, 1, 2, 2, 2]})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(a=x.shift(1, fill_value=-1), b=x.shift(-2, fill_value=-7).over("g"),
                        c=x.shift(1, fill_value=0.5))  # fmt: skip

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("fills", [(False, 0, 0.0, 1), (1.0, 1, True)], ids=["bool", "int"])
def test_fill_values_equal_in_python_are_planned_apart(fills: tuple[Any, ...]) -> None:
    # 0 == 0.0 == False in Python, but the results' types differ: computed one after
    # another in one process, each plan must be its own (the second once reused the first)
    table = frame(15, seed=3, dtypes=("int8", "bool"), nulls="random")
    column = "bool" if fills[0] is False else "int8"
    for fill in fills:
        assert_same_as_polars(table, lambda m, q, fill=fill: q.select(
            s=m.col(column).shift(1, fill_value=fill)), kinds=("pyarrow",))  # fmt: skip


def test_shift_fill_value_expression(tier: str) -> None:
    # polars takes a scalar expression (a reduction) as the fill value; a column it refuses
    table = frame(15, seed=2, dtypes=("int8", "float32"), nulls="random")

    def steps(m: Any, q: Any) -> Any:
        i8, f32 = m.col("int8"), m.col("float32")
        return q.select(i=i8.shift(1, fill_value=i8.max()),
                        j=f32.shift(-2, fill_value=f32.mean()))  # fmt: skip

    assert_same_as_polars(table, steps)
    assert_same_as_polars(table, lambda m, q: q.select(
        i=m.col("int8").shift(1, fill_value=m.col("int8"))))  # fmt: skip


STRINGS = pa.table({"s": pa.array(["a", None, "bb", "", None, "ccc", "a", None]),
                   "g": [1, 2, 1, 2, 1, 2, 2, 1]})  # fmt: skip


def test_ordered_ops_on_string_columns(tier: str) -> None:
    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.select(a=s.shift(1), b=s.shift(-3), c=s.cum_count(),
                        d=s.fill_null(strategy="forward"),
                        e=s.fill_null(strategy="backward", limit=1),
                        f=s.shift(1).over("g"), h=s.cum_count(reverse=True),
                        i=s.forward_fill(limit=1), j=s.backward_fill(),
                        k=s.forward_fill().over("g"),
                        l=s.backward_fill(limit=1).over("g"))  # fmt: skip

    assert_same_as_polars(STRINGS, steps)


def test_running_min_and_max_of_strings(tier: str) -> None:
    # polars compares strings by their UTF-8 bytes; colbridge's codes are numbered by
    # first appearance, so the scan runs on ranks (equal strings from a string
    # function's entries rank alike)
    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.select(a=s.cum_min(), b=s.cum_max(), c=s.cum_min(reverse=True),
                        d=s.cum_max(reverse=True), e=s.cum_min().over("g"),
                        f=s.cum_max(reverse=True).over("g"),
                        h=s.str.to_uppercase().cum_max(), i=s.cum_min() == s,
                        j=s.shift(1).cum_max().over("g"))  # fmt: skip

    assert_same_as_polars(STRINGS, steps)
    text = cb.lazy(STRINGS).select(a=cb.col("s").cum_min()).explain()
    assert "it compares strings by their rank among the dictionary's" in text
    # and in the string language
    assert_same_as_polars(STRINGS, lambda m, q: q.eval("a = cum_min(s); b = s.cum_max().over(g)")
                          if m is cb else q.with_columns(a=m.col("s").cum_min(),
                                                         b=m.col("s").cum_max().over("g")))


@settings(max_examples=40, deadline=None)
@given(words=st.lists(st.one_of(st.none(), st.sampled_from(
           ["", "a", "A", "ab", "b", "é", "e", "ß", "Ω", "z", "zz", "a\x00"])),
           max_size=40),
       keys=st.lists(st.integers(0, 3), min_size=40, max_size=40),
       cut=st.integers(0, 40), offset=st.integers(0, 3))  # fmt: skip
def test_running_min_and_max_of_strings_hypothesis(words: list[str | None], keys: list[int],
                                                   cut: int, offset: int) -> None:  # fmt: skip
    # chunks cut anywhere and a sliced column: each chunk's strings rank together
    full = ["pad"] * offset + words
    column = pa.array(full, pa.large_string()).slice(offset)
    cut = min(cut, len(words))
    chunked = pa.chunked_array([column.slice(0, cut), column.slice(cut)])
    table = pa.table({"s": chunked, "g": pa.array(keys[: len(words)], pa.int8())})

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.select(a=s.cum_min(), b=s.cum_max(reverse=True), c=s.cum_max().over("g"),
                        d=s.cum_min(reverse=True).over("g"))  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("pyarrow", "polars"))


def test_running_min_of_categoricals_is_refused_as_polars_does() -> None:
    table = STRINGS.set_column(0, "s", STRINGS["s"].cast(pa.dictionary(pa.uint32(),
                                                                       pa.large_string())))
    with pytest.raises(cb.UnsupportedTypeError, match=r"`cum_min`/`cum_max` take strings"):
        cb.lazy(table).select(cb.col("s").cum_min()).compute()


def test_shift_string_column_with_a_fill_value(tier: str) -> None:
    assert_same_as_polars(STRINGS, lambda m, q: q.select(b=m.col("s").shift(-2, fill_value="z")))
    # a number or a bool fills with its text, as polars casts it to the column's String
    assert_same_as_polars(STRINGS, lambda m, q: q.select(
        n=m.col("s").shift(-2, fill_value=3), f=m.col("s").shift(1, fill_value=2.5),
        t=m.col("s").shift(1, fill_value=True),
        e=m.col("s").shift(3, fill_value=1e20)))  # fmt: skip


# -- windows --------------------------------------------------------------------------------
WINDOWS = [(1, None), (1, 1), (2, None), (2, 0), (3, 1), (3, 3), (4, 2), (5, None), (6, 1),
           (17, None), (17, 5), (100, None), (100, 1), (100, 0)]  # fmt: skip


@pytest.mark.parametrize(("window", "min_samples"), WINDOWS,
                         ids=[f"w{w}-ms{m}" for w, m in WINDOWS])  # fmt: skip
def test_rolling_window_and_min_samples(window: int, min_samples: int | None, tier: str) -> None:
    table = table_of(17, seed=window * 7 + (min_samples or 0), offset=2)
    funcs = {"sum": ("rolling_sum", {}), "mean": ("rolling_mean", {}), "min": ("rolling_min", {}),
             "max": ("rolling_max", {}), "std": ("rolling_std", {}), "var": ("rolling_var", {}),
             "var0": ("rolling_var", {"ddof": 0}), "std2": ("rolling_std", {"ddof": 2})}

    def build(m: Any, x: Any) -> dict[str, Any]:
        return {f"{key}{'c' * center}": getattr(x, func)(window, min_samples=min_samples,
                                                         center=center, **extra)
                for key, (func, extra) in funcs.items()
                for center in (False, True)}  # fmt: skip

    names = [f"{key}{'c' * center}_{c}" for key in funcs for center in (False, True)
             for c in NUMBERS]  # fmt: skip
    assert_same_as_polars(table, each_column(build), tolerance=tolerances(names),
                          kinds=("pyarrow", "polars"))  # fmt: skip


def test_rolling_min_samples_above_window_is_an_error() -> None:
    table = table_of(6, seed=1)
    assert_same_as_polars(table, lambda m, q: q.select(m.col("int16").rolling_mean(3,
                                                                               min_samples=4)))
    with pytest.raises(cb.ColbridgeError, match="min_samples"):
        cb.lazy(table).select(cb.col("float64").rolling_sum(2, min_samples=3)).compute()


def test_rolling_on_a_long_frame_with_wide_windows(tier: str) -> None:
    # many windows sliding over NaN/inf and null runs; windows wider than a chunk
    table = table_of(600, seed=5, nulls="runs", chunks=3, offset=1)

    def build(m: Any, x: Any) -> dict[str, Any]:
        return {"sum": x.rolling_sum(50, min_samples=10), "mean": x.rolling_mean(7),
                "min": x.rolling_min(64, min_samples=1), "max": x.rolling_max(9, center=True),
                "std": x.rolling_std(30, min_samples=2, center=True)}  # fmt: skip

    names = [f"{k}_{c}" for k in ("sum", "mean", "min", "max", "std") for c in NUMBERS]
    assert_same_as_polars(table, each_column(build), tolerance=tolerances(names),
                          kinds=("pyarrow",))  # fmt: skip


# -- ewm_mean --------------------------------------------------------------------------------
DECAYS = [{"alpha": 0.5}, {"alpha": 1.0}, {"alpha": 0.05}, {"span": 1}, {"span": 3.5},
          {"com": 0}, {"com": 2.0}, {"half_life": 0.7}, {"half_life": 10}]  # fmt: skip


@pytest.mark.parametrize("decay", DECAYS, ids=lambda d: "-".join(f"{k}{v}" for k, v in d.items()))
def test_ewm_mean_parameters(decay: dict[str, float], tier: str) -> None:
    table = table_of(31, seed=len(str(decay)), nulls="runs")

    def build(m: Any, x: Any) -> dict[str, Any]:
        out = {}
        for adjust in (True, False):
            for ignore in (True, False):
                for ms in (0, 1, 3):
                    out[f"a{int(adjust)}i{int(ignore)}m{ms}"] = x.ewm_mean(
                        **decay, adjust=adjust, ignore_nulls=ignore, min_samples=ms)
        return out

    keys = [f"a{a}i{i}m{ms}" for a in (1, 0) for i in (1, 0) for ms in (0, 1, 3)]
    assert_same_as_polars(table, each_column(build),
                          tolerance=tolerances([f"{k}_{c}" for k in keys for c in NUMBERS]))


def test_ewm_mean_leading_nulls_and_specials(tier: str) -> None:
    values = [None, None, 1.0, np.nan, 2.0, None, np.inf, 3.0, None, None, None, -1.0, 0.5]
    table = pa.table({"x": pa.array(values, type=pa.float64()),
                      "y": pa.array([None, None, 1.0, 5.0, 2.0, None, -4.0, 3.0, None, None,
                                     None, -1.0, 0.5])})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in ("x", "y"):
            for adjust in (True, False):
                for ignore in (True, False):
                    out[f"{c}{int(adjust)}{int(ignore)}"] = m.col(c).ewm_mean(
                        com=1.5, adjust=adjust, ignore_nulls=ignore, min_samples=2)
        return q.select(**out)

    assert_same_as_polars(table, steps, tolerance=F64_TOL)


# -- fill_null ------------------------------------------------------------------------------
@pytest.mark.parametrize("nulls", ["random", "leading", "trailing", "runs", "all", "none"])
def test_fill_null_forward_backward_limits(nulls: str, tier: str) -> None:
    table = frame(29, seed=len(nulls), dtypes=("int8", "uint64", "float32", "float64", "bool"),
                  nulls=nulls, offset=3)  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in ("int8", "uint64", "float32", "float64", "bool"):
            x = m.col(c)
            out[f"f_{c}"] = x.fill_null(strategy="forward")
            out[f"b_{c}"] = x.fill_null(strategy="backward")
            for limit in (0, 1, 2, 4):
                out[f"f{limit}_{c}"] = x.fill_null(strategy="forward", limit=limit)
                out[f"b{limit}_{c}"] = x.fill_null(strategy="backward", limit=limit)
                out[f"fw{limit}_{c}"] = x.forward_fill(limit=limit)
                out[f"bw{limit}_{c}"] = x.backward_fill(limit=limit)
            out[f"v_{c}"] = x.fill_null(x.shift(1))
        return q.select(**out)

    assert_same_as_polars(table, steps)


# -- the string language ---------------------------------------------------------------------
EVAL_CASES = [
    ("y = shift(x, 1)", lambda x: x.shift(1)),
    ("y = shift(x, n=-2, fill_value=0.5)", lambda x: x.shift(-2, fill_value=0.5)),
    ("y = x.shift(3)", lambda x: x.shift(3)),
    ("y = diff(x)", lambda x: x.diff()),
    ("y = x.diff(n=2)", lambda x: x.diff(2)),
    ("y = pct_change(x, 1)", lambda x: x.pct_change(1)),
    ("y = cum_sum(x)", lambda x: x.cum_sum()),
    ("y = x.cum_sum(reverse=True)", lambda x: x.cum_sum(reverse=True)),
    ("y = cum_max(x, reverse=True)", lambda x: x.cum_max(reverse=True)),
    ("y = x.cum_count()", lambda x: x.cum_count()),
    ("y = x.rolling_mean(3)", lambda x: x.rolling_mean(3)),
    ("y = rolling_sum(x, 4, min_samples=1, center=True)",
     lambda x: x.rolling_sum(4, min_samples=1, center=True)),
    ("y = x.rolling_std(5, min_samples=2, ddof=0)",
     lambda x: x.rolling_std(5, min_samples=2, ddof=0)),
    ("y = x.rolling_min(window_size=2)", lambda x: x.rolling_min(2)),
    # positional arguments in polars' order: window, weights, min_samples, center, ddof
    ("y = x.rolling_std(3, None, 2, True, 0)",
     lambda x: x.rolling_std(3, None, min_samples=2, center=True, ddof=0)),
    ("y = ewm_mean(x, alpha=0.5)", lambda x: x.ewm_mean(alpha=0.5)),
    ("y = x.ewm_mean(span=3, adjust=False, ignore_nulls=True, min_samples=2)",
     lambda x: x.ewm_mean(span=3, adjust=False, ignore_nulls=True, min_samples=2)),
    ("y = fill_null(x, strategy='forward')", lambda x: x.fill_null(strategy="forward")),
    ("y = x.fill_null(strategy='backward', limit=1)",
     lambda x: x.fill_null(strategy="backward", limit=1)),
    ("y = forward_fill(x)", lambda x: x.forward_fill()),
    ("y = x.backward_fill(limit=2)", lambda x: x.backward_fill(limit=2)),
    ("y = forward_fill(x, limit=1).over(g)", lambda x: x.forward_fill(limit=1).over("g")),
    ("y = (x - x.shift(1)) / x.rolling_std(3)", lambda x: (x - x.shift(1)) / x.rolling_std(3)),
    ("y = x.diff().abs().sum()", lambda x: x.diff().abs().sum()),
    ("y = shift(x, 1).over(g)", lambda x: x.shift(1).over("g")),
    ("y = shift(x, 2, fill_value=0.5) - x.shift(-1, fill_value=-2.0)",
     lambda x: x.shift(2, fill_value=0.5) - x.shift(-1, fill_value=-2.0)),
    ("y = over(cum_sum(x), g)", lambda x: x.cum_sum().over("g")),
]


@pytest.mark.parametrize(("text", "build"), EVAL_CASES, ids=[t for t, _ in EVAL_CASES])
def test_eval_strings(text: str, build: Any) -> None:
    table = frame(20, seed=6, dtypes=("float64",), nulls="random").rename_columns(
        ["g", "x", "p_x"])  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        if m is cb:
            return q.eval(text)
        return q.with_columns(y=build(m.col("x")))

    assert_same_as_polars(table, steps, tolerance=F64_TOL)


def test_eval_through_the_accessor() -> None:
    import polars as pl

    df = pl.DataFrame({"x": [3, None, 1, 4, 1, 5], "g": ["a", "b", "a", None, "b", "a"]})
    got = df.gpu.eval("y = shift(x, 1); z = x.rolling_mean(2, min_samples=1); "
                      "w = cum_sum(x).over(g)")  # fmt: skip
    want = df.with_columns(y=pl.col("x").shift(1), z=pl.col("x").rolling_mean(2, min_samples=1),
                           w=pl.col("x").cum_sum().over("g"))  # fmt: skip
    assert got.schema == want.schema
    assert got.rows() == want.rows()


@pytest.mark.parametrize("text", ["y = x.rolling_mean(-1)", "y = ewm_mean(x)",
                                  "y = ewm_mean(x, alpha=0.5, span=2)",
                                  "y = fill_null(x, strategy='bogus')",
                                  "y = shift(x, nope=1)", "y = x.rolling_sum()",
                                  # polars reads a second number as the weights: refused
                                  "y = rolling_mean(x, 3, 2)"])  # fmt: skip
def test_eval_bad_arguments_raise(text: str) -> None:
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(cb.ColbridgeError):
        cb.lazy(table).eval(text).compute()


# -- errors ---------------------------------------------------------------------------------
def _raises(build: Any, table: pa.Table | None = None) -> cb.ColbridgeError:
    """The `ColbridgeError` raised building or running ``select(y=build(col("x")))``."""
    table = pa.table({"x": [1.0, None, 3.0, 4.0]}) if table is None else table
    with pytest.raises(cb.ColbridgeError) as info:
        cb.lazy(table).select(y=build(cb.col("x"))).compute()
    return info.value


def test_window_size_zero_is_all_null_as_in_polars(tier: str) -> None:
    # polars 2.1 returns nulls for window_size 0 (no window has a value); polars wins
    table = table_of(7, seed=3)

    def build(m: Any, x: Any) -> dict[str, Any]:
        return {"sum": x.rolling_sum(0), "mean": x.rolling_mean(0), "min": x.rolling_min(0),
                "max": x.rolling_max(0), "std": x.rolling_std(0), "var": x.rolling_var(0)}

    assert_same_as_polars(table, each_column(build))


def test_bad_window_sizes() -> None:
    for func in ("rolling_sum", "rolling_mean", "rolling_min", "rolling_max", "rolling_std",
                 "rolling_var"):  # fmt: skip
        assert "window_size" in str(_raises(lambda x, f=func: getattr(x, f)(-3)))
        assert "window_size" in str(_raises(lambda x, f=func: getattr(x, f)(2.5)))
    assert "min_samples" in str(_raises(lambda x: x.rolling_mean(3, min_samples=-1)))
    assert "min_samples" in str(_raises(lambda x: x.rolling_mean(3, min_samples=4)))


def test_bad_ewm_parameters() -> None:
    assert "alpha" in str(_raises(lambda x: x.ewm_mean()))
    _raises(lambda x: x.ewm_mean(alpha=0.5, span=3))
    _raises(lambda x: x.ewm_mean(com=1, half_life=2))
    for bad in ({"alpha": 0}, {"alpha": 1.5}, {"alpha": -0.1}, {"span": 0.5}, {"com": -1},
                {"half_life": 0}):  # fmt: skip
        _raises(lambda x, kw=bad: x.ewm_mean(**kw))


def test_bad_fill_null_arguments() -> None:
    err = _raises(lambda x: x.fill_null(strategy="bogus"))
    assert "bogus" in str(err)
    _raises(lambda x: x.fill_null())
    _raises(lambda x: x.fill_null(0, strategy="forward"))
    _raises(lambda x: x.fill_null(0, limit=1))
    _raises(lambda x: x.fill_null(strategy="forward", limit=-1))
    assert "limit" in str(_raises(lambda x: x.forward_fill(limit=-1)))
    assert "limit" in str(_raises(lambda x: x.backward_fill(limit=1.5)))


def test_weights_are_refused() -> None:
    err = _raises(lambda x: x.rolling_sum(3, weights=[1.0, 2.0, 3.0]))
    assert "weights" in str(err)
    _raises(lambda x: x.rolling_mean(2, weights=[0.5, 0.5]))


STRING_REFUSED = ["diff", "cum_sum", "cum_prod", "rolling_sum", "rolling_min", "rolling_max"]


@pytest.mark.parametrize("func", STRING_REFUSED)
def test_ordered_ops_polars_refuses_on_strings(func: str) -> None:
    table = pa.table({"x": pa.array(["a", None, "b", "c"])})
    args = (2,) if func.startswith("rolling") else ()
    # polars raises: colbridge must raise a ColbridgeError (checked by the helper)
    assert_same_as_polars(table, lambda m, q: q.select(y=getattr(m.col("x"), func)(*args)))
    with pytest.raises(cb.ColbridgeError, match="x"):
        cb.lazy(table).select(y=getattr(cb.col("x"), func)(*args)).compute()


def test_diff_of_bool_is_refused() -> None:
    table = pa.table({"x": [True, False, None]})
    assert_same_as_polars(table, lambda m, q: q.select(y=m.col("x").diff()))


@pytest.mark.parametrize("n", [1, 3, -2])
def test_diff_drop_is_refused_naming_the_slice_that_gives_it(n: int) -> None:
    """polars' ``null_behavior="drop"`` drops rows; the refusal names the slice that does it."""
    import polars as pl

    table = pa.table({"x": pa.array([1, 3, None, 6, 15, 2], type=pa.int32())})
    with pytest.raises(cb.UnsupportedOperationError) as info:
        cb.col("x").diff(n, null_behavior="drop")
    rows = f"out[{n}:]" if n >= 0 else f"out[:{n}]"
    assert f"slice the computed frame, e.g. `{rows}`" in str(info.value)
    # the advice gives polars' result
    out = pl.from_arrow(cb.lazy(table).select(cb.col("x").diff(n)).compute())
    sliced = out[n:] if n >= 0 else out[:n]
    assert sliced.equals(pl.from_arrow(table).select(pl.col("x").diff(n, null_behavior="drop")))
    with pytest.raises(cb.SchemaError, match="use 'ignore' or 'drop'"):
        cb.col("x").diff(n, null_behavior="keep")


def test_the_string_language_fills_a_shift_with_values_or_expressions() -> None:
    table = pa.table({"x": [1.0, 2.0, None, 4.0], "s": ["a", "b", None, "c"]})
    import polars as pl

    got = cb.lazy(table).eval("a = x.shift(2, fill_value=x.mean())\n"
                              "b = shift(x, -1, fill_value=0)\n"
                              "c = shift(s, 1, fill_value='zz')\n"
                              "d = x.shift(1, fill_value=-1.5)")  # fmt: skip
    x, s = pl.col("x"), pl.col("s")
    want = pl.from_arrow(table).with_columns(
        a=x.shift(2, fill_value=x.mean()), b=x.shift(-1, fill_value=0),
        c=s.shift(1, fill_value="zz"), d=x.shift(1, fill_value=-1.5))  # fmt: skip
    assert pl.from_arrow(got.compute()).equals(want)


def test_a_window_fills_each_group_with_its_own_value(tmp_path: Any) -> None:
    # `x.shift(1, fill_value=x.mean()).over(g)`: the rows shifted in at a group's edge
    # take that group's mean (polars); a fill that varies within a group is refused
    import polars as pl
    from polars.testing import assert_frame_equal

    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(8)
    df = pl.DataFrame({"x": rng.normal(size=300), "g": rng.integers(0, 5, 300),
                       "h": rng.integers(0, 3, 300)})  # fmt: skip
    df = df.with_columns(x=pl.when(pl.col("x") > 1.5).then(None).otherwise(pl.col("x")))

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(a=x.shift(1, fill_value=x.mean()).over("g"),
                        b=x.shift(2, fill_value=x.max() * 2).over("g", "h"))  # fmt: skip

    assert_same_as_polars(df.to_arrow(), steps, rtol=1e-12)
    on_host = pl.from_arrow(compute_on_host(steps(cb, cb.lazy(df.to_arrow()))))
    assert_frame_equal(on_host, steps(pl, df), rel_tol=1e-12)
    path = tmp_path / "f.parquet"
    df.write_parquet(path, row_group_size=70)
    streamed = steps(cb, cb.lazy(pl.scan_parquet(path), batch_rows=70)).compute()
    assert_frame_equal(pl.DataFrame(streamed), steps(pl, df), rel_tol=1e-12)
    for fill in (cb.col("x").mean().over("h"), cb.col("x")):
        with pytest.raises(cb.SchemaError, match="must be one value"):
            df.gpu.select(cb.col("x").shift(1, fill_value=fill).over("g")).compute()


def test_float32_rolling_std_is_the_root_of_its_float32_variance() -> None:
    # polars takes a Float32 window's square root in Float32, of the Float32 variance
    import polars as pl

    rng = np.random.default_rng(0)
    df = pl.DataFrame({"x": pl.Series(rng.integers(-50, 50, 600) / 4.0, dtype=pl.Float32),
                       "g": rng.integers(0, 4, 600)})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(s=x.rolling_std(5), v=x.rolling_var(5), o=x.rolling_std(7).over("g"),
                        c=x.rolling_std(4, center=True, min_samples=1))  # fmt: skip

    assert steps(cb, df.gpu).compute().equals(steps(pl, df))
