"""String, Categorical and Enum values meeting in one expression, against polars 2.1.

polars' rules: in ``when``/``coalesce``/``fill_null`` a String column with a
Categorical (or an Enum) gives String; Categoricals alone stay Categorical and
Enums alone Enum; a string literal adapts to the other branches (a Categorical
with ``lit("q")`` stays Categorical; an Enum takes a literal that is one of its
categories, and ``when`` fails on one that is not while ``coalesce`` makes it
null); Categorical with Enum, and Enums with different categories, are errors.
Comparisons go by label, Enums by category order; an Enum with a String casts the
strings to the enum (``<`` fails on a string that is not a category, ``==`` does not).
A cast to an Enum takes each label's place among its categories (a label that is not
one is null, or an error when strict); its codes are UInt8, UInt16 or UInt32 by size.

Each case runs on polars and on colbridge (pyarrow, polars and pandas inputs;
the NumPy and compiled CPU tiers; the CUDA kernel text run on the host) over
columns with nulls whose dictionaries differ (own values, own order, unused
categories), sliced at an odd offset and empty.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.testing.asserts import as_arrow, to_kind
from colbridge.testing.cuda_host import HEADER, compute_on_host

Build = Callable[[Any], Any]

CATEGORIES = ["a", "b", "c", "é"]
OTHER_CATEGORIES = ["c", "b", "x"]


def _table() -> pa.Table:
    f = [True, False, None, True, False, None, True, False, True, None, False, True, False]
    s = ["a", "b", None, "z", None, "é", "", "c", None, "b", "q", None, "a"]
    c = ["b", None, "c", "a", None, "é", "b", None, "c", "a", None, "b", "é"]
    d = [None, "z", "c", None, "a", "q", None, "c", "z", None, "a", "c", None]
    e = ["b", None, "c", "a", None, "é", "a", "c", None, "b", None, "a", "c"]
    e2 = ["a", "c", None, "b", "a", None, None, "é", "b", "c", None, None, "a"]
    ex = ["x", "c", None, "b", None, "x", "c", None, "b", "x", None, "c", None]
    t = ["c", "a", None, "é", "b", None, "a", "b", "c", "é", "a", None, "b"]  # categories of e
    n = len(f)
    assert all(len(col) == n for col in (s, c, d, e, e2, ex, t))

    def dictionary(values: list[str | None], labels: list[str], *, ordered: bool) -> pa.Array:
        # the labels in the given order, unused ones included: each column its own dictionary
        codes = pa.array([None if v is None else labels.index(v) for v in values], pa.int32())
        return pa.DictionaryArray.from_arrays(codes, pa.array(labels, pa.large_string()),
                                              ordered=ordered)  # fmt: skip

    # enums as polars writes them to Arrow, so polars reads them back as the same Enum
    enums = pl.DataFrame({
        "e": pl.Series(e, dtype=pl.Enum(CATEGORIES)),
        "e2": pl.Series(e2, dtype=pl.Enum(CATEGORIES)),
        "ex": pl.Series(ex, dtype=pl.Enum(OTHER_CATEGORIES)),
    }).to_arrow()  # fmt: skip
    columns = {
        "f": pa.array(f, pa.bool_()),
        "s": pa.array(s, pa.large_string()),
        "t": pa.array(t, pa.large_string()),
        "c": dictionary(c, ["é", "c", "b", "a", "unused"], ordered=False),
        "d": dictionary(d, ["q", "z", "a", "c"], ordered=False),
    }
    fields = [pa.field(name, arr.type) for name, arr in columns.items()]
    fields += [enums.schema.field(name) for name in enums.column_names]
    arrays = [*columns.values(), *(enums.column(name) for name in enums.column_names)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


TABLE = _table()
SHAPES = {"full": TABLE, "sliced": TABLE.slice(3), "empty": TABLE.slice(0, 0)}


def _when(m: Any, then: Any, otherwise: Any) -> Any:
    return m.when(m.col("f")).then(then).otherwise(otherwise)


# name: (build, polars' result type, written out so the table documents the rule)
CASES: dict[str, tuple[Build, Any]] = {
    "when_s_c": (lambda m: _when(m, m.col("s"), m.col("c")), pl.String),
    "when_c_s": (lambda m: _when(m, m.col("c"), m.col("s")), pl.String),
    "when_c_lit": (lambda m: _when(m, m.col("c"), m.lit("q")), pl.Categorical),
    "when_lit_c": (lambda m: _when(m, m.lit("q"), m.col("c")), pl.Categorical),
    "when_c_null": (lambda m: m.when(m.col("f")).then(m.col("c")), pl.Categorical),
    "when_c_null_str": (lambda m: _when(m, m.col("c"), m.lit(None, dtype=pl.String)),
                        pl.Categorical),
    "when_c_d": (lambda m: _when(m, m.col("c"), m.col("d")), pl.Categorical),
    "when_s_lit": (lambda m: _when(m, m.col("s"), m.lit("q")), pl.String),
    "when_lit_lit": (lambda m: _when(m, m.lit("p"), m.lit("q")), pl.String),
    "when_c_upper_lit": (lambda m: _when(m, m.col("c"), m.lit("q").str.to_uppercase()),
                         pl.String),
    "when_chain": (lambda m: m.when(m.col("f")).then(m.col("c"))
                   .when(m.col("f").is_null()).then(m.lit("n")).otherwise(m.col("s")),
                   pl.String),
    "coalesce_s_c": (lambda m: m.coalesce(m.col("s"), m.col("c")), pl.String),
    "coalesce_c_s": (lambda m: m.coalesce(m.col("c"), m.col("s")), pl.String),
    "coalesce_c_lit": (lambda m: m.coalesce(m.col("c"), m.lit("q")), pl.Categorical),
    "coalesce_c_d": (lambda m: m.coalesce(m.col("c"), m.col("d")), pl.Categorical),
    # with more than two arguments a literal no longer adapts (polars 2.1)
    "coalesce_c_d_lit": (lambda m: m.coalesce(m.col("c"), m.col("d"), m.lit("q")), pl.String),
    "coalesce_c_d_null": (lambda m: m.coalesce(m.col("c"), m.col("d"), None), pl.Categorical),
    "coalesce_c_lit_s": (lambda m: m.coalesce(m.col("c"), m.lit("q"), m.col("s")), pl.String),
    "coalesce_c_null_lit": (lambda m: m.coalesce(m.col("c"), None, m.lit("q")), pl.String),
    "s_fill_c": (lambda m: m.col("s").fill_null(m.col("c")), pl.String),
    "c_fill_s": (lambda m: m.col("c").fill_null(m.col("s")), pl.String),
    "c_fill_lit": (lambda m: m.col("c").fill_null("q"), pl.Categorical),
    "c_fill_d": (lambda m: m.col("c").fill_null(m.col("d")), pl.Categorical),
    "c_fill_d_fill_lit": (lambda m: m.col("c").fill_null(m.col("d")).fill_null("q"),
                          pl.Categorical),
    "c_shift_fill_s": (lambda m: m.col("c").shift(1, fill_value=m.col("s").first()),
                       pl.String),
    "eq_s_c": (lambda m: m.col("s") == m.col("c"), pl.Boolean),
    "ne_c_s": (lambda m: m.col("c") != m.col("s"), pl.Boolean),
    "lt_s_c": (lambda m: m.col("s") < m.col("c"), pl.Boolean),
    "ge_c_s": (lambda m: m.col("c") >= m.col("s"), pl.Boolean),
    "lt_c_d": (lambda m: m.col("c") < m.col("d"), pl.Boolean),
    "when_e_s": (lambda m: _when(m, m.col("e"), m.col("s")), pl.String),
    "coalesce_s_e": (lambda m: m.coalesce(m.col("s"), m.col("e")), pl.String),
    "e_fill_s": (lambda m: m.col("e").fill_null(m.col("s")), pl.String),
    "when_e_lit": (lambda m: _when(m, m.col("e"), m.lit("é")), pl.Enum(CATEGORIES)),
    "when_e_null": (lambda m: m.when(m.col("f")).then(m.col("e")), pl.Enum(CATEGORIES)),
    "when_e_e2": (lambda m: _when(m, m.col("e"), m.col("e2")), pl.Enum(CATEGORIES)),
    "coalesce_e_e2_lit": (lambda m: m.coalesce(m.col("e"), m.col("e2"), m.lit("a")), pl.String),
    "coalesce_e_e2": (lambda m: m.coalesce(m.col("e"), m.col("e2")), pl.Enum(CATEGORIES)),
    "when_chain_e_e2_lit": (lambda m: m.when(m.col("f")).then(m.col("e"))
                            .when(m.col("f").is_null()).then(m.col("e2")).otherwise(m.lit("a")),
                            pl.Enum(CATEGORIES)),
    # a literal that is not a category: null in coalesce (polars 2.1)
    "coalesce_e_other_lit": (lambda m: m.coalesce(m.col("e"), m.lit("q")), pl.Enum(CATEGORIES)),
    "e_fill_lit": (lambda m: m.col("e").fill_null("c"), pl.Enum(CATEGORIES)),
    "eq_e_s": (lambda m: m.col("e") == m.col("s"), pl.Boolean),
    "eq_e_e2": (lambda m: m.col("e") == m.col("e2"), pl.Boolean),
    "lt_e_e2": (lambda m: m.col("e") < m.col("e2"), pl.Boolean),  # category order
    # an Enum with a String: the strings cast to the enum, compared in category order
    "lt_e_t": (lambda m: m.col("e") < m.col("t"), pl.Boolean),
    "le_t_e": (lambda m: m.col("t") <= m.col("e"), pl.Boolean),
    "gt_e2_t": (lambda m: m.col("e2") > m.col("t"), pl.Boolean),
    "ge_t_e2": (lambda m: m.col("t") >= m.col("e2"), pl.Boolean),
    "lt_e_t_lower": (lambda m: m.col("e") < m.col("t").str.to_lowercase(), pl.Boolean),
    "ge_e_when_t": (lambda m: m.col("e") >= _when(m, m.col("t"), m.lit("b")), pl.Boolean),
    "ne_e_s": (lambda m: m.col("e") != m.col("s"), pl.Boolean),  # "z", "" are just unequal
    # casts to an Enum: each label's place among the categories (not strict: null if none)
    "cast_s_enum_lax": (lambda m: m.col("s").cast(pl.Enum(CATEGORIES), strict=False),
                        pl.Enum(CATEGORIES)),
    "cast_t_enum": (lambda m: m.col("t").cast(pl.Enum(CATEGORIES)), pl.Enum(CATEGORIES)),
    "cast_c_enum_lax": (lambda m: m.col("c").cast(pl.Enum(CATEGORIES), strict=False),
                        pl.Enum(CATEGORIES)),
    "cast_e_other_lax": (lambda m: m.col("e").cast(pl.Enum(OTHER_CATEGORIES), strict=False),
                         pl.Enum(OTHER_CATEGORIES)),
    "null_enum": (lambda m: m.lit(None, dtype=pl.Enum(CATEGORIES)), pl.Enum(CATEGORIES)),
    "enum_codes": (lambda m: m.col("t").cast(pl.Enum(CATEGORIES)).to_physical(), pl.UInt8),
}

ERROR_CASES: dict[str, Build] = {
    "when_c_e": lambda m: _when(m, m.col("c"), m.col("e")),
    "coalesce_e_c": lambda m: m.coalesce(m.col("e"), m.col("c")),
    "when_chain_s_c_e": lambda m: m.when(m.col("f")).then(m.col("s"))
    .when(m.col("f").is_null()).then(m.col("c")).otherwise(m.col("e")),
    "e_fill_c": lambda m: m.col("e").fill_null(m.col("c")),
    "when_e_ex": lambda m: _when(m, m.col("e"), m.col("ex")),
    "coalesce_e_ex": lambda m: m.coalesce(m.col("e"), m.col("ex")),
    "when_e_other_lit": lambda m: _when(m, m.col("e"), m.lit("q")),
    "eq_c_e": lambda m: m.col("c") == m.col("e"),
    "eq_e_ex": lambda m: m.col("e") == m.col("ex"),
    "lt_c_e": lambda m: m.col("c") < m.col("e"),
    # "z" and "" are not categories of e, on rows where e is set: the cast fails
    "lt_e_s": lambda m: m.col("e") < m.col("s"),
    "ge_s_e2": lambda m: m.col("s") >= m.col("e2"),
    # a strict cast to an Enum of labels that are not all its categories
    "cast_s_enum": lambda m: m.col("s").cast(pl.Enum(CATEGORIES)),
    "cast_e_other": lambda m: m.col("e").cast(pl.Enum(OTHER_CATEGORIES)),
}

KINDS = ("pyarrow", "polars", "pandas-nullable")

host_run = pytest.mark.skipif(
    shutil.which("g++") is None or "__ballot_sync" not in HEADER.read_text(),
    reason="g++ and a host header with warp primitives run the CUDA kernels on the host",
)
RUNNERS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("compiled", id="compiled"),
    pytest.param("cuda-host", id="cuda-host", marks=host_run),
]


def _select(m: Any, q: Any, cases: dict[str, tuple[Build, Any]]) -> Any:
    return q.select(**{name: build(m) for name, (build, _) in cases.items()})


def _kind_of(arrow_type: pa.DataType, values: pa.ChunkedArray) -> Any:
    """A column's polars-level type, read off Arrow (an ordered dictionary is an Enum)."""
    if pa.types.is_dictionary(arrow_type):
        if not arrow_type.ordered:
            return pl.Categorical
        chunks = [c for c in values.chunks] or [pa.array([], arrow_type)]
        return pl.Enum([str(v) for v in chunks[0].dictionary.to_pylist()])
    if pa.types.is_boolean(arrow_type):
        return pl.Boolean
    if arrow_type in (pa.string(), pa.large_string(), pa.string_view()):
        return pl.String
    if pa.types.is_integer(arrow_type):  # an enum's codes
        return pl.from_arrow(pa.array([], arrow_type)).dtype  # type: ignore[union-attr]
    return arrow_type


def run_with(runner: str, lazy: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``lazy`` computed by ``runner`` (one of `RUNNERS`)."""
    if runner == "cuda-host":
        return compute_on_host(lazy)
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", runner)
    return lazy.compute(device="cpu")


def test_the_table_states_polars_types() -> None:
    want = _select(pl, pl.from_arrow(TABLE).lazy(), CASES).collect()
    assert {name: want.schema[name] for name in CASES} == {n: t for n, (_, t) in CASES.items()}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("runner", RUNNERS)
def test_mixes_match_polars(runner: str, kind: str, shape: str,
                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    table = SHAPES[shape]
    want = _select(pl, pl.from_arrow(table).lazy(), CASES).collect()
    result = run_with(runner, _select(cb, cb.lazy(to_kind(table, kind)), CASES), monkeypatch)
    if kind == "polars":
        assert result.schema == want.schema
    got = as_arrow(result)
    assert got.column_names == list(CASES)
    for name, (_, dtype) in CASES.items():
        column = got.column(name)
        assert _kind_of(column.type, column) == dtype, name
        assert column.to_pylist() == want[name].to_list(), name


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_mixes_polars_refuses_are_refused(case: str, kind: str) -> None:
    build = ERROR_CASES[case]
    with pytest.raises(pl.exceptions.PolarsError):
        pl.from_arrow(TABLE).select(x=build(pl))
    with pytest.raises(cb.ColbridgeError, match=r"enum|Enum"):
        cb.lazy(to_kind(TABLE, kind)).select(x=build(cb)).compute()
