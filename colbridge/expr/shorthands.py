"""polars' top-level shorthands for a reduction of named columns.

``cb.sum("a")`` is ``cb.col("a").sum()``. As in polars, each takes column names
(several at once select several columns, one output each); ``first()`` and
``last()`` without a name are the frame's first and last columns
(`colbridge.expr.selectors.nth`), and ``all()`` without a name every column
(`colbridge.expr.selectors.all`). The names shadow Python's builtins only as
attributes of ``colbridge`` (``cb.sum``), as they do in polars.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colbridge.errors import SchemaError
from colbridge.expr.api import Expr, col
from colbridge.expr.selectors import names_of, nth

__all__ = [
    "any",
    "approx_n_unique",
    "count",
    "cum_count",
    "cum_sum",
    "first",
    "head",
    "last",
    "max",
    "mean",
    "median",
    "min",
    "n_unique",
    "quantile",
    "std",
    "sum",
    "tail",
    "var",
]


def _columns(func: str, names: Sequence[Any]) -> Expr:
    """The columns ``names`` select (one or more names, as ``col`` takes them)."""
    flat = names_of(names, func)
    if not flat:
        msg = (f"`cb.{func}()` takes one or more column names, e.g. `cb.{func}(\"a\")`"
               + ("; count rows with `cb.len()`" if func == "count" else ""))  # fmt: skip
        raise SchemaError(msg)
    return col(*flat)


def sum(*names: str | Sequence[str]) -> Expr:
    """The sum of each named column (``pl.sum``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    >>> df.gpu.select(cb.sum("a", "b")).compute().rows()
    [(3, 7.0)]
    """
    return _columns("sum", names).sum()


def mean(*columns: str | Sequence[str]) -> Expr:
    """The mean of each named column (``pl.mean``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.mean("a", "b")).compute().rows()
    [(1.5, 4.333333333333333)]
    """
    return _columns("mean", columns).mean()


def median(*columns: str | Sequence[str]) -> Expr:
    """The median of each named column (``pl.median``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.median("b")).compute().rows()
    [(4.0,)]
    """
    return _columns("median", columns).median()


def min(*names: str | Sequence[str]) -> Expr:
    """The smallest value of each named column (``pl.min``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.min("a", "b")).compute().rows()
    [(1, 3.0)]
    """
    return _columns("min", names).min()


def max(*names: str | Sequence[str]) -> Expr:
    """The largest value of each named column (``pl.max``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.max("a", "b")).compute().rows()
    [(2, 6.0)]
    """
    return _columns("max", names).max()


def n_unique(*columns: str | Sequence[str]) -> Expr:
    """The number of distinct values of each named column, a null counting as one.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.n_unique("a", "f")).compute().rows()
    [(3, 3)]
    """
    return _columns("n_unique", columns).n_unique()


def count(*columns: str | Sequence[str]) -> Expr:
    """The number of non-null values of each named column (``pl.count``); rows: `len`.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.count("a", "f")).compute().rows()
    [(2, 2)]
    """
    return _columns("count", columns).count()


def std(column: str, ddof: int = 1) -> Expr:
    """The standard deviation of one column with ``ddof`` delta degrees of freedom (``pl.std``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.std("b", ddof=0)).compute().rows()
    [(1.247219128924647,)]
    """
    return _columns("std", [column]).std(ddof)


def var(column: str, ddof: int = 1) -> Expr:
    """The variance of one column with ``ddof`` delta degrees of freedom (``pl.var``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.var("b")).compute().rows()
    [(2.333333333333333,)]
    """
    return _columns("var", [column]).var(ddof)


def quantile(column: str, quantile: float, interpolation: str = "nearest") -> Expr:
    """One quantile of one column (``pl.quantile``; polars' default ``"nearest"``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.quantile("b", 0.5)).compute().rows()
    [(4.0,)]
    """
    return _columns("quantile", [column]).quantile(quantile, interpolation)


def cum_sum(*names: str | Sequence[str]) -> Expr:
    """The running sum of each named column (``pl.cum_sum``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.cum_sum("a", "b")).compute().rows()
    [(1, 3.0), (3, 7.0), (None, 13.0)]
    """
    return _columns("cum_sum", names).cum_sum()


def cum_count(*columns: str | Sequence[str], reverse: bool = False) -> Expr:
    """The running count of non-null values of each named column (``pl.cum_count``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.cum_count("a")).compute().rows()
    [(1,), (2,), (2,)]
    """
    return _columns("cum_count", columns).cum_count(reverse=reverse)


def any(*names: str | Sequence[str], ignore_nulls: bool = True) -> Expr:
    """Whether any value of each named Boolean column is true (``pl.any``).

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.any("f")).compute().rows()
    [(True,)]
    """
    return _columns("any", names).any(ignore_nulls=ignore_nulls)


def first(*columns: str | Sequence[str]) -> Expr:
    """The first value of each named column; without a name, the frame's first column.

    As ``pl.first``: ``cb.first()`` selects a column (``cb.nth(0)``), it does not reduce.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    >>> df.gpu.select(cb.first("b"), c=cb.first() * 10).compute().rows()
    [(3.0, 10), (3.0, 20)]
    """
    if not columns:
        return nth(0)
    return _columns("first", columns).first()


def last(*columns: str | Sequence[str]) -> Expr:
    """The last value of each named column; without a name, the frame's last column.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 2, None], "b": [3.0, 4.0, 6.0], "f": [True, False, None]})
    >>> df.gpu.select(cb.last("a", "b")).compute().rows()
    [(None, 6.0)]
    """
    if not columns:
        return nth(-1)
    return _columns("last", columns).last()


def head(column: str, n: int = 10) -> Expr:
    """The first ``n`` values of a column (``pl.head``): ``col(column).head(n)``.

    >>> import colbridge as cb
    >>> cb.head("x", 2).sum()
    <Expr col("x").head(2).sum()>
    """
    return col(column).head(n)


def tail(column: str, n: int = 10) -> Expr:
    """The last ``n`` values of a column (``pl.tail``): ``col(column).tail(n)``.

    >>> import colbridge as cb
    >>> cb.tail("x", 2).sum()
    <Expr col("x").tail(2).sum()>
    """
    return col(column).tail(n)


def approx_n_unique(*columns: str | Sequence[str]) -> Expr:
    """The number of distinct values of each named column (``pl.approx_n_unique``; exact).

    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1, 1, 2]})
    >>> df.gpu.select(cb.approx_n_unique("a")).compute().item()
    2
    """
    return _columns("approx_n_unique", columns).approx_n_unique()
