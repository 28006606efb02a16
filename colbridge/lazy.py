"""The lazy handle: what ``df.gpu.with_columns(...)`` returns.

It holds the frame and the queued steps; nothing runs until `LazyFrame.compute`.
Handles are immutable: every method returns a new handle, so a handle can be
kept, branched and computed many times. Planning and running live in
`colbridge.runtime`; this module only queues and dispatches.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from colbridge.columns.frames import FrameAdapter, adapt_frame
from colbridge.errors import (
    ColbridgeError,
    ColumnNotFoundError,
    DuplicateColumnError,
    InvalidOperationError,
    SchemaError,
    UnsupportedOperationError,
)
from colbridge.expr.api import Expr, as_expr, col, int_range, lit
from colbridge.expr.api import len as rows_of_frame
from colbridge.expr.nodes import Binary, Node, output_name
from colbridge.expr.selectors import expand, expand_one
from colbridge.plan.logical import Step, names_after

if TYPE_CHECKING:
    from colbridge.runtime.execute import ComputeReport, PreparedPlan
    from colbridge.runtime.report import PlanReport

# The runtime (planner, code generators, backends) is imported on a handle's first
# compute or report, not with colbridge: `import colbridge` stays short.

__all__ = ["GroupBy", "LazyFrame"]

_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(
                max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="colbridge"
            )
        return _EXECUTOR


def _named(
    exprs: Iterable[Any], named: Mapping[str, Any], available: Callable[[], Sequence[str]],
    frame: Callable[[], Sequence[str]] | None = None,
) -> tuple[tuple[str, Node], ...]:  # fmt: skip
    """A step's ``(output name, expression)`` items, selections of columns expanded.

    See `colbridge.expr.selectors.expand`; ``available()`` gives the columns there,
    ``frame()`` those that column positions count, where they differ.
    """
    items: list[tuple[str, Node]] = []
    for e in exprs:
        if isinstance(e, (list, tuple)):
            items.extend(_named(e, {}, available, frame))
            continue
        items.extend(expand(as_expr(e).node, available, frame))
    for name, e in named.items():
        items.extend((name, node) for _, node in expand(as_expr(e).node, available, frame))
    return tuple(items)


class LazyFrame:
    """Queued work on one frame. Build with ``df.gpu`` or `colbridge.lazy`; run with `compute`.

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"a": [1.0, 4.0, 9.0], "b": [1.0, 1.0, None]})
    >>> q = df.gpu.with_columns(c=cb.col("a").sqrt() + cb.col("b"))
    >>> q.compute()["c"].to_list()
    [2.0, 3.0, None]
    """

    def __init__(
        self, frame: Any, steps: tuple[Step, ...] = (), *, numpy_output: bool = False
    ) -> None:
        self._frame = frame
        self._steps = steps
        self._numpy_output = numpy_output
        self.last_report: ComputeReport | None = None
        # plans for the frames this handle has seen, by column names (and input types)
        self._memo: dict[Any, Any] = {}
        # group ids of the frame's key columns, while their buffers are the same
        self._groups: dict[Any, Any] = {}

    @property
    def steps(self) -> tuple[Step, ...]:
        """The queued steps, oldest first (immutable)."""
        return self._steps

    @property
    def frame(self) -> Any:
        """The frame the steps apply to."""
        return self._frame

    # -- queueing -------------------------------------------------------------
    def _names(self) -> list[str]:
        """The frame's columns after the queued steps (what ``cb.all()`` selects now)."""
        return names_after(self._steps, self._input_names())

    def _input_names(self) -> list[str]:
        return list(adapt_frame(self._frame).names)

    def _then(self, step: Step) -> LazyFrame:
        return self._with_steps((*self._steps, step))

    def _with_steps(self, steps: tuple[Step, ...]) -> LazyFrame:
        """A handle over the same input with these steps (subclasses keep their kind)."""
        return LazyFrame(self._frame, steps, numpy_output=self._numpy_output)

    def with_columns(self, *exprs: Any, **named: Any) -> LazyFrame:
        """Add or replace columns (polars' ``with_columns``).

        Expressions in one call all see the frame as it was before the call.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"a": [1, 2, 3]})
        >>> cb.lazy(t).with_columns(b=cb.col("a") * 10).compute().column("b").to_pylist()
        [10, 20, 30]
        """
        return self._then(Step("with_columns", _named(exprs, named, self._names)))

    def select(self, *exprs: Any, **named: Any) -> LazyFrame:
        """Keep only these outputs (column names or expressions).

        Outputs that are all reductions give a one-row result.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"a": [1.0, 2.0, 6.0]})
        >>> cb.lazy(t).select(m=cb.col("a").mean(), n=cb.col("a").count()).compute().to_pylist()
        [{'m': 3.0, 'n': 3}]
        """
        return self._then(Step("select", _named(exprs, named, self._names)))

    def with_row_index(self, name: str = "index", offset: int = 0) -> LazyFrame:
        """Put the row number first, as polars' ``with_row_index`` (UInt32, from ``offset``).

        The number counts the rows this step sees (after a filter, the kept ones); in a
        stream it goes on from the batch before. A number past UInt32 is an error.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"a": [5, 6, 7]})
        >>> cb.lazy(t).with_row_index("i", offset=10).compute().to_pylist()
        [{'i': 10, 'a': 5}, {'i': 11, 'a': 6}, {'i': 12, 'a': 7}]
        """
        if not isinstance(name, str):
            msg = f"`with_row_index(name={name!r})`: the name is a string, e.g. `'index'`"
            raise SchemaError(msg)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            msg = f"`with_row_index(offset={offset!r})`: the offset is a whole number >= 0"
            raise InvalidOperationError(msg)
        number = (int_range(rows_of_frame()) + offset).cast("uint32")  # strict: past UInt32
        names = self._names()
        if name in names:
            msg = (
                f"`with_row_index({name!r})`: the frame already has a column `{name}`; "
                "give the index another name"
            )
            raise DuplicateColumnError(msg)
        return self.select(number.alias(name), *names)

    def filter(self, *predicates: Any, **constraints: Any) -> LazyFrame:
        """Keep rows where every predicate is true (null counts as false).

        As in polars, predicates may come in a list, and ``name=value`` constraints
        keep the rows where the column equals the value.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"a": [1, None, 3]})
        >>> cb.lazy(t).filter(cb.col("a") > 1).compute().column("a").to_pylist()
        [3]
        """
        flat: list[Any] = []
        for p in predicates:
            if isinstance(p, (list, tuple)):
                if p and all(isinstance(v, bool) for v in p):
                    msg = ("`filter` of a list of booleans (a mask of rows) is not supported; "
                           "add the mask to the frame as a column and filter on it")  # fmt: skip
                    raise SchemaError(msg)
                flat.extend(p)
            else:
                flat.append(p)
        flat += [col(name) == value for name, value in constraints.items()]
        if not flat:
            msg = "`filter` needs at least one predicate"
            raise SchemaError(msg)
        node = expand_one(as_expr(flat[0]).node, self._names, "filter")
        for p in flat[1:]:
            node = Binary("and", node, expand_one(as_expr(p).node, self._names, "filter"))
        return self._then(Step("filter", (("", node),)))

    # -- the frame's rows and columns (polars' LazyFrame methods) ---------------
    # each is written with the steps above: rows by position are `select` outputs with
    # fewer rows (one filter of the frame, `colbridge.plan.row_changing`)

    def head(self, n: int = 5) -> LazyFrame:
        """The first ``n`` rows (polars' ``head``; ``limit`` is the same).

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
        >>> df.gpu.with_columns(c=cb.col("a") * 2).head(2).compute().rows()
        [(1, 'x', 2), (2, 'y', 4)]
        """
        return self._each_column(lambda c: c.head(n))

    def limit(self, n: int = 5) -> LazyFrame:
        """The first ``n`` rows: `head`.

        >>> import polars as pl
        >>> pl.DataFrame({"a": [1, 2, 3]}).gpu.lazy().limit(1).compute()["a"].to_list()
        [1]
        """
        return self.head(n)

    def tail(self, n: int = 5) -> LazyFrame:
        """The last ``n`` rows (polars' ``tail``).

        >>> import polars as pl
        >>> pl.DataFrame({"a": [1, 2, 3]}).gpu.lazy().tail(2).compute()["a"].to_list()
        [2, 3]
        """
        return self._each_column(lambda c: c.tail(n))

    def slice(self, offset: int, length: int | None = None) -> LazyFrame:
        """``length`` rows from ``offset`` (negative: from the end; None: to the end).

        >>> import polars as pl
        >>> pl.DataFrame({"a": [1, 2, 3, 4]}).gpu.lazy().slice(-3, 2).compute()["a"].to_list()
        [2, 3]
        """
        return self._each_column(lambda c: c.slice(offset, length))

    def gather_every(self, n: int, offset: int = 0) -> LazyFrame:
        """Every ``n``-th row from position ``offset`` (polars' ``gather_every``).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2, 3, 4, 5]})
        >>> df.gpu.lazy().gather_every(2, 1).compute()["a"].to_list()
        [2, 4]
        """
        return self._each_column(lambda c: c.gather_every(n, offset))

    def reverse(self) -> LazyFrame:
        """The rows in reverse order (polars' ``reverse``).

        >>> import polars as pl
        >>> pl.DataFrame({"a": [1, 2, 3]}).gpu.lazy().reverse().compute()["a"].to_list()
        [3, 2, 1]
        """
        return self._each_column(lambda c: c.reverse())

    def null_count(self) -> LazyFrame:
        """One row: each column's count of nulls (polars' ``null_count``).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, None], "b": ["x", "y"]})
        >>> df.gpu.lazy().null_count().compute().rows()
        [(1, 0)]
        """
        return self._each_column(lambda c: c.null_count())

    def count(self) -> LazyFrame:
        """One row: each column's count of non-null values (polars' ``count``).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [2, None, 1], "s": ["b", "c", "a"]})
        >>> df.gpu.lazy().count().compute().rows()
        [(2, 3)]
        """
        return self._each_column(lambda c: c.count())

    def first(self) -> LazyFrame:
        """The first row (polars' ``first``: ``head(1)``; no row of an empty frame).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [2, None, 1], "s": ["b", "c", "a"]})
        >>> df.gpu.lazy().first().compute().rows()
        [(2, 'b')]
        """
        return self.head(1)

    def last(self) -> LazyFrame:
        """The last row (polars' ``last``: ``tail(1)``; no row of an empty frame).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [2, None, 1], "s": ["b", "c", "a"]})
        >>> df.gpu.lazy().last().compute().rows()
        [(1, 'a')]
        """
        return self.tail(1)

    def min(self) -> LazyFrame:
        """One row: each column's smallest value (strings by their bytes, as polars).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [2, None, 1], "s": ["b", "c", "a"]})
        >>> df.gpu.lazy().min().compute().rows()
        [(1, 'a')]
        """
        return self._each_column(lambda c: c.min())

    def max(self) -> LazyFrame:
        """One row: each column's largest value (strings by their bytes, as polars).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [2, None, 1], "s": ["b", "c", "a"]})
        >>> df.gpu.lazy().max().compute().rows()
        [(2, 'c')]
        """
        return self._each_column(lambda c: c.max())

    def _each_column(self, rows: Callable[[Expr], Expr]) -> LazyFrame:
        return self.select(*[rows(col(name)) for name in self._names()])

    # -- whole-frame statistics and fills (polars' per-type rules) ------------------------
    def collect_schema(self) -> Any:
        """The result's column names and polars types, as polars' ``collect_schema``.

        Found by running the steps over no rows of the input (nothing is read).

        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"a": [1, 2], "s": ["x", "y"]})
        >>> cb.lazy(df).with_columns(b=cb.col("a") / 2).collect_schema()
        Schema([('a', Int64), ('s', String), ('b', Float64)])
        """
        import polars as pl

        empty = LazyFrame(self._empty_input(), self._steps).compute(device="cpu")
        assert isinstance(empty, pa.Table)
        return pl.from_arrow(empty, rechunk=False).schema  # type: ignore[union-attr]

    def _empty_input(self) -> pa.Table:
        """The input with no rows: its columns' Arrow types, as the kernels read them."""
        adapter = adapt_frame(self._frame)
        return pa.table({name: adapter.column(name).slice(0, 0) for name in adapter.names})

    def _per_type(self, applies: Callable[[Any], bool], rows: Callable[[Expr], Expr]) -> LazyFrame:
        """One row: ``rows`` of each column whose polars type ``applies``; null of the rest.

        polars' whole-frame statistics (``sum``, ``mean``...) give a column of another
        type a null of its own type (a string column's sum is a null string).
        """
        schema = self.collect_schema()
        return self.select(*[rows(col(name)) if applies(dtype) else _null_of(name, dtype)
                             for name, dtype in schema.items()])  # fmt: skip

    def sum(self) -> LazyFrame:
        """One row: each column's sum, as polars.

        Booleans count their trues; a column of another type than numbers, booleans and
        durations gives a null of its type.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2], "b": [True, True], "s": ["x", "y"]})
        >>> df.gpu.lazy().sum().compute().rows()
        [(3, 2, None)]
        """
        import polars as pl

        return self._per_type(lambda t: t.is_numeric() or t == pl.Boolean
                              or isinstance(t, pl.Duration), Expr.sum)  # fmt: skip

    def mean(self) -> LazyFrame:
        """One row: each column's mean, as polars.

        Of numbers, booleans and temporal columns; any other gives a null of its type.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2], "s": ["x", "y"]})
        >>> df.gpu.lazy().mean().compute().rows()
        [(1.5, None)]
        """
        import polars as pl

        return self._per_type(lambda t: t.is_numeric() or t.is_temporal() or t == pl.Boolean,
                              Expr.mean)  # fmt: skip

    def median(self) -> LazyFrame:
        """One row: each column's median, as polars.

        Of numbers but decimals, booleans and temporal columns; any other gives a null
        of its type.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2, 9], "s": ["x", "y", "z"]})
        >>> df.gpu.lazy().median().compute().rows()
        [(2.0, None)]
        """
        import polars as pl

        return self._per_type(lambda t: (t.is_numeric() and not t.is_decimal())
                              or t.is_temporal() or t == pl.Boolean, Expr.median)  # fmt: skip

    def std(self, ddof: int = 1) -> LazyFrame:
        """One row: each column's standard deviation, as polars.

        Of numbers and booleans; any other column gives a null of its type.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1.0, 3.0], "s": ["x", "y"]})
        >>> df.gpu.lazy().std(ddof=0).compute().rows()
        [(1.0, None)]
        """
        import polars as pl

        return self._per_type(lambda t: t.is_numeric() or t == pl.Boolean,
                              lambda c: c.std(ddof))  # fmt: skip

    def var(self, ddof: int = 1) -> LazyFrame:
        """One row: each column's variance, as polars.

        Of numbers and booleans; any other column gives a null of its type.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1.0, 3.0], "s": ["x", "y"]})
        >>> df.gpu.lazy().var().compute().rows()
        [(2.0, None)]
        """
        import polars as pl

        return self._per_type(lambda t: t.is_numeric() or t == pl.Boolean,
                              lambda c: c.var(ddof))  # fmt: skip

    def quantile(self, quantile: float, interpolation: str = "nearest") -> LazyFrame:
        """One row: each column's quantile (see `Expr.quantile`), as polars.

        Of numbers and temporal columns; any other gives a null of its type.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1.0, 2.0, 4.0], "b": [True, False, True]})
        >>> df.gpu.lazy().quantile(0.5, "linear").compute().rows()
        [(2.0, None)]
        """
        return self._per_type(lambda t: t.is_numeric() or t.is_temporal(),
                              lambda c: c.quantile(quantile, interpolation))  # fmt: skip

    def fill_null(self, value: Any = None, strategy: str | None = None, limit: int | None = None,
                  *, matches_supertype: bool = True) -> LazyFrame:  # fmt: skip
        """Fill nulls of every column with ``value`` or by ``strategy``, as polars.

        A Python value fills the columns of its kind only, as polars picks them: a
        number the numeric ones (with ``matches_supertype``; else those of its own
        type, Int64 or Float64), a bool the Boolean ones, a string the String and
        Categorical ones, a date, datetime, time or timedelta the columns of that
        type (and columns of the Null type, always). An expression or a ``strategy``
        fills every column.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, None], "f": [None, 2.5], "s": [None, "y"]})
        >>> df.gpu.lazy().fill_null(0).compute().rows()
        [(1, 0.0, None), (0, 2.5, 'y')]
        """
        import datetime as dt

        import polars as pl

        def kind(value: Any) -> Callable[[Any], bool] | None:
            if isinstance(value, bool):
                return lambda t: t == pl.Boolean
            if isinstance(value, (int, float)):
                if matches_supertype:
                    return lambda t: t.is_numeric()
                own = pl.Int64 if isinstance(value, int) else pl.Float64
                return lambda t: t == own
            if isinstance(value, dt.datetime):
                return lambda t: isinstance(t, pl.Datetime)
            if isinstance(value, dt.timedelta):
                return lambda t: isinstance(t, pl.Duration)
            if isinstance(value, dt.date):
                return lambda t: t == pl.Date
            if isinstance(value, dt.time):
                return lambda t: t == pl.Time
            if isinstance(value, str):
                return lambda t: t in (pl.String, pl.Categorical)
            return None  # an expression: every column

        def filled(c: Expr) -> Expr:
            return c.fill_null(value, strategy, limit)

        picks = kind(value) if value is not None else None
        if picks is None:
            return self.select(*[filled(col(name)) for name in self._names()])
        schema = self.collect_schema()
        return self.with_columns(*[filled(col(name)) for name, dtype in schema.items()
                                   if picks(dtype) or dtype == pl.Null])  # fmt: skip

    def fill_nan(self, value: Any) -> LazyFrame:
        """Fill the NaN of every float column with ``value``, as polars (None: null).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1.0, float("nan")], "i": [1, 2]})
        >>> df.gpu.lazy().fill_nan(0).compute().rows()
        [(1.0, 1), (0.0, 2)]
        """
        floats = [name for name, dtype in self.collect_schema().items() if dtype.is_float()]
        return self.with_columns(*[col(name).fill_nan(value) for name in floats])

    def drop_nans(self, subset: str | Sequence[str] | None = None) -> LazyFrame:
        """The rows with no NaN in the float columns of ``subset`` (all when None), as polars.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1.0, float("nan"), None], "i": [1, 2, 3]})
        >>> df.gpu.lazy().drop_nans().compute()["i"].to_list()
        [1, 3]
        """
        names = set(self._subset(subset, "drop_nans"))
        floats = [name for name, dtype in self.collect_schema().items()
                  if dtype.is_float() and name in names]  # fmt: skip
        if not floats:
            return self
        return self.filter(*[col(name).is_not_nan().fill_null(True) for name in floats])

    def shift(self, n: int = 1, *, fill_value: Any = None) -> LazyFrame:
        """Every column shifted by ``n`` rows (see `Expr.shift`), as polars.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "z"]})
        >>> df.gpu.lazy().shift(1).compute().rows()
        [(None, None), (1, 'x'), (2, 'y')]
        """
        return self.select(*[col(name).shift(n, fill_value=fill_value)
                             for name in self._names()])  # fmt: skip

    def interpolate(self) -> LazyFrame:
        """Every column's nulls filled by linear interpolation (see `Expr.interpolate`).

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1.0, None, 3.0]})
        >>> df.gpu.lazy().interpolate().compute()["a"].to_list()
        [1.0, 2.0, 3.0]
        """
        return self._each_column(Expr.interpolate)

    def top_k(self, k: int, *, by: Any, reverse: bool | Sequence[bool] = False) -> LazyFrame:
        """The ``k`` rows with the largest ``by`` values (nulls last), as polars' ``top_k``.

        ``reverse``: the smallest instead (one flag, or one per key). polars gives
        the rows in no set order; these come sorted.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [3, 1, None, 2]})
        >>> df.gpu.lazy().top_k(2, by="a").compute()["a"].to_list()
        [3, 2]
        """
        return self._extreme_rows("top_k", k, by, reverse, largest=True)

    def bottom_k(self, k: int, *, by: Any, reverse: bool | Sequence[bool] = False) -> LazyFrame:
        """The ``k`` rows with the smallest ``by`` values (nulls last), as polars' ``bottom_k``.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [3, 1, None, 2]})
        >>> df.gpu.lazy().bottom_k(2, by="a").compute()["a"].to_list()
        [1, 2]
        """
        return self._extreme_rows("bottom_k", k, by, reverse, largest=False)

    def _extreme_rows(self, method: str, k: int, by: Any, reverse: bool | Sequence[bool],
                      largest: bool) -> LazyFrame:  # fmt: skip
        keys = list(by) if isinstance(by, (list, tuple)) else [by]
        if not keys:
            msg = f"`{method}(by=[])`: give at least one key, e.g. `{method}(3, by='a')`"
            raise SchemaError(msg)
        flags = [reverse] * len(keys) if isinstance(reverse, bool) else list(reverse)
        if len(flags) != len(keys) or not all(isinstance(f, bool) for f in flags):
            msg = (f"`{method}(reverse={reverse!r})`: one bool, or one per key of `by` "
                   f"({len(keys)})")  # fmt: skip
            raise SchemaError(msg)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            msg = f"`{method}(k={k!r})`: the number of rows, a whole number >= 0"
            raise SchemaError(msg)
        descending = [largest != f for f in flags]
        return self.sort(*keys, descending=descending, nulls_last=True).head(k)

    def drop_nulls(self, subset: str | Sequence[str] | None = None) -> LazyFrame:
        """The rows with no null in ``subset`` (every column when None), as polars.

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, None, 3], "b": [None, 2.0, 3.0]})
        >>> df.gpu.lazy().drop_nulls("a").compute()["a"].to_list()
        [1, 3]
        """
        names = self._subset(subset, "drop_nulls")
        if not names:
            return self
        return self.filter(*[col(name).is_not_null() for name in names])

    def unique(self, subset: str | Sequence[str] | None = None, *, keep: str = "any",
               maintain_order: bool = False) -> LazyFrame:  # fmt: skip
        """One row per distinct value of ``subset`` (every column when None), as polars.

        ``keep``: ``"first"`` or ``"any"`` (the first row of each), ``"last"``, or
        ``"none"`` (only values held by one row). Rows come in frame order, which
        ``maintain_order=True`` asks for and polars allows without it. Values are told
        apart as in `group_by` (a null one value, NaN one value).

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 1, 2], "b": [5, 6, 7]})
        >>> df.gpu.lazy().unique("a", keep="last").compute().rows()
        [(1, 6), (2, 7)]
        """
        if keep not in ("first", "last", "any", "none"):
            msg = (f"`unique(keep={keep!r})`: `keep` is 'first', 'last', 'any' or 'none', "
                   "as in polars")  # fmt: skip
            raise InvalidOperationError(msg)
        if not isinstance(maintain_order, bool):
            msg = f"`unique(maintain_order={maintain_order!r})`: a bool"
            raise SchemaError(msg)
        keys = self._subset(subset, "unique")
        if not keys:
            return self
        count = rows_of_frame().over(*keys)
        if keep == "none":
            return self.filter(count == 1)
        position = int_range(rows_of_frame()).over(*keys)  # the row's place among its own
        return self.filter(position == (count - 1 if keep == "last" else 0))

    def sort(self, by: Any, *more_by: Any, descending: bool | Sequence[bool] = False,
             nulls_last: bool | Sequence[bool] = False, maintain_order: bool = False,
             multithreaded: bool = True) -> LazyFrame:  # fmt: skip
        """The rows sorted by ``by`` (names or expressions), as polars' ``sort``.

        ``descending`` and ``nulls_last``: one flag, or one per key. Rows of equal
        keys keep their frame order (what ``maintain_order=True`` asks for).

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [2, None, 1], "b": ["x", "y", "z"]})
        >>> df.gpu.lazy().sort("a", nulls_last=True).compute()["b"].to_list()
        ['z', 'x', 'y']
        """
        keys = [*(by if isinstance(by, (list, tuple)) else [by]), *more_by]
        return self._each_column(lambda c: c.sort_by(
            *keys, descending=descending, nulls_last=nulls_last,
            maintain_order=maintain_order, multithreaded=multithreaded))  # fmt: skip

    def drop(self, *columns: str | Sequence[str], strict: bool = True) -> LazyFrame:
        """The frame without ``columns`` (one not there is an error when ``strict``).

        >>> import polars as pl
        >>> pl.DataFrame({"a": [1], "b": [2]}).gpu.lazy().drop("a").compute().columns
        ['b']
        """
        dropped = [c for group in columns for c in ([group] if isinstance(group, str) else group)]
        if strict:
            self._subset(dropped, "drop")
        gone = set(dropped)
        return self.select(*[name for name in self._names() if name not in gone])

    def rename(self, mapping: Mapping[str, str] | Callable[[str], str], *,
               strict: bool = True) -> LazyFrame:  # fmt: skip
        """Columns renamed by ``mapping`` (old name to new, or a function of the name).

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1], "b": [2]})
        >>> df.gpu.lazy().rename({"a": "x"}).compute().columns
        ['x', 'b']
        """
        names = self._names()
        if callable(mapping):
            new = {name: mapping(name) for name in names}
        else:
            if strict:
                self._subset(list(mapping), "rename")
            new = {name: mapping.get(name, name) for name in names}
        for old, name in new.items():
            if not isinstance(name, str):
                msg = f"`rename`: column `{old}`'s new name is {name!r}; names are strings"
                raise SchemaError(msg)
        return self.select(*[col(name).alias(new[name]) for name in names])

    def cast(self, dtypes: Mapping[str, Any] | Any, *, strict: bool = True) -> LazyFrame:
        """Columns cast to new types: ``{name: type}``, or one type for every column.

        As polars' ``LazyFrame.cast`` (``strict``: a value that does not fit is an
        error, else null). Types are keyed by column name; polars' keys by type
        (``{pl.Int64: pl.Float64}``) are refused, as colbridge selects columns by name.

        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
        >>> df.gpu.lazy().cast({"a": pl.Float32}).compute().schema["a"]
        Float32
        """
        if not isinstance(dtypes, Mapping):
            return self.with_columns(*[col(n).cast(dtypes, strict=strict) for n in self._names()])
        if any(not isinstance(name, str) for name in dtypes):
            msg = ("`cast`: colbridge takes columns by name (`{'a': pl.Float64}`), not by type "
                   f"(got {list(dtypes)!r}); name the columns to cast")  # fmt: skip
            raise SchemaError(msg)
        self._subset(list(dtypes), "cast")
        return self.with_columns(*[col(name).cast(dtype, strict=strict)
                                   for name, dtype in dtypes.items()])  # fmt: skip

    def _subset(self, subset: str | Sequence[str] | None, method: str) -> list[str]:
        """The columns ``subset`` names (all when None), each checked to be in the frame."""
        names = self._names()
        if subset is None:
            return names
        if not isinstance(subset, (str, list, tuple)):
            msg = f"`{method}`: columns are named by a string or a list of strings, got {subset!r}"
            raise SchemaError(msg)
        wanted = [subset] if isinstance(subset, str) else list(subset)
        for name in wanted:
            if not isinstance(name, str):
                msg = f"`{method}`: columns are named by strings, got {name!r}"
                raise SchemaError(msg)
            if name not in names:
                msg = f"`{method}`: {ColumnNotFoundError.from_missing(name, names)}"
                raise ColumnNotFoundError(msg)
        return wanted

    def rolling(self, index_column: str, *, period: Any, offset: Any = None,
                closed: str = "right", group_by: Any = None) -> Rolling:  # fmt: skip
        """Windows of the rows whose ``index_column`` lies in ``(t - period, t]`` of each row.

        polars' ``LazyFrame.rolling``: `Rolling.agg` gives one row per row, the index
        column then each aggregation over the row's window (`colbridge.Expr.rolling`:
        sum, mean, min, max, std, var, median, quantile and count, and expressions of
        them). The index must be sorted. ``group_by`` is refused: write the windows per
        group with ``.over(key)`` in ``with_columns``.

        >>> import polars as pl, colbridge as cb
        >>> df = pl.DataFrame({"t": [1, 2, 4], "x": [1, 2, 3]})
        >>> df.gpu.rolling("t", period="2i").agg(cb.col("x").sum()).compute().rows()
        [(1, 1), (2, 3), (4, 3)]
        """
        if group_by is not None:
            msg = (f"`rolling({index_column!r}, group_by={group_by!r})`: windows per group "
                   "of a `rolling` frame are not supported; compute them per group in "
                   "`with_columns`: `cb.col('x').sum().rolling('t', period=...).over(key)`")
            raise UnsupportedOperationError(msg)
        if not isinstance(index_column, str):
            msg = f"`rolling(index_column={index_column!r})`: the index is a column name"
            raise SchemaError(msg)
        return Rolling(self, index_column, (period, offset, closed))

    def group_by(self, *keys: Any, maintain_order: bool = True, **named_keys: Any) -> GroupBy:
        """Group the rows by ``keys``; `GroupBy.agg` gives one row per group.

        Keys are column names or expressions of any type (integers, booleans,
        floats, strings, categoricals, dates...); a null key is a group of its own.
        ``name=expression`` keys are named, as in polars (``group_by(month=...)``).
        Groups come in the order of their first row (polars' ``maintain_order=True``);
        ``maintain_order=False`` allows any order, and colbridge keeps that one.

        Examples
        --------
        >>> import polars as pl
        >>> import colbridge as cb
        >>> df = pl.DataFrame({"g": ["b", "a", "b"], "x": [1, 2, 3]})
        >>> df.gpu.group_by("g").agg(cb.col("x").sum(), n=cb.len()).compute().rows()
        [('b', 4, 2), ('a', 2, 1)]
        """
        from colbridge.expr.api import _key_nodes

        flat: list[Any] = []
        for k in keys:
            flat.extend(k if isinstance(k, (list, tuple)) else [k])
        named: list[tuple[str, Node]] = []
        for k in flat:
            nodes = _key_nodes((k,), "group_by")  # several for `cb.col("a", "b")`
            if len(nodes) == 1:  # its own name: the alias, where it has one
                named.append((output_name(as_expr(k).node), nodes[0]))
            else:
                named += [(output_name(n), n) for n in nodes]
        for name, k in named_keys.items():
            (node,) = _key_nodes((as_expr(k).alias(name),), "group_by")
            named.append((name, node))
        _ = maintain_order  # first appearance is the order kept either way
        return GroupBy(self, tuple(named))

    def eval(self, text: str) -> LazyFrame:
        """Queue ``name = expression`` statements (``;`` or newline separated), in order.

        The string is parsed with a whitelist (see `colbridge.parse_assignments`); nothing
        in it is executed as Python.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"a": [1.0, 4.0]})
        >>> cb.lazy(t).eval("r = sqrt(a); s = r + 1").compute().column("s").to_pylist()
        [2.0, 3.0]
        """
        from colbridge.expr.parser import parse_assignments

        # One step per statement, so a later statement sees the columns of earlier
        # ones; they still fuse into one kernel.
        out = self
        for name, node in parse_assignments(text):
            out = out.with_columns(**{name: Expr(node)})
        return out

    # -- planning -------------------------------------------------------------
    def _prepared(self, adapter: FrameAdapter) -> PreparedPlan:
        # kept on the handle (handles are immutable), so a recomputed handle plans nothing
        names = tuple(adapter.names)
        plan = self._memo.get(names)
        if plan is None:
            from colbridge.runtime.execute import prepare

            plan = self._memo[names] = prepare(self._steps, names)
        return plan

    # -- running --------------------------------------------------------------
    def compute(
        self,
        device: str = "auto",
        *,
        fallback: str = "cpu",
        numpy_output: bool | None = None,
    ) -> Any:
        """Run the queued steps and return a frame of the input's kind.

        Input columns are never modified; new columns are fresh Arrow arrays.
        ``numpy_output=True`` gives NumPy-backed pandas columns where there are no nulls.

        ``device`` is ``"auto"`` (a usable GPU, else the CPU), ``"cpu"``, ``"cuda"`` or
        ``"cuda:N"``; ``fallback="cpu"`` reruns on the CPU with a `DeviceFallbackWarning`
        when the GPU is missing or fails, ``fallback="raise"`` raises `DeviceError`.

        Examples
        --------
        >>> import pandas as pd
        >>> import colbridge as cb
        >>> pdf = pd.DataFrame({"a": [1.0, 2.0]}, index=[10, 20])
        >>> out = pdf.gpu.with_columns(b=cb.col("a") + 1).compute(device="cpu")
        >>> out["b"].tolist(), list(out.index)
        ([2.0, 3.0], [10, 20])
        """
        from colbridge.runtime.execute import on_device

        np_out = self._numpy_output if numpy_output is None else numpy_output
        adapter = adapt_frame(self._frame, numpy_output=np_out)
        result, report = on_device(
            lambda target, report: self._run(adapter, report, target), device, fallback
        )
        self.last_report = report
        return result

    def compute_async(
        self, device: str = "auto", *, fallback: str = "cpu", numpy_output: bool | None = None
    ) -> Future[Any]:
        """`compute` on a worker thread; a `concurrent.futures.Future` of the result.

        ``await asyncio.wrap_future(q.compute_async())`` inside a coroutine.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> q = cb.lazy(pa.table({"a": [1, 2]})).with_columns(b=cb.col("a") * 2)
        >>> future = q.compute_async()
        >>> future.result().column("b").to_pylist()
        [2, 4]
        """
        # the worker sees the caller's context (e.g. `cuda.options(...)`)
        context = contextvars.copy_context()
        return _executor().submit(
            context.run, self.compute, device, fallback=fallback, numpy_output=numpy_output
        )

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol: the computed result as Arrow record batches.

        DuckDB (``duckdb.sql("select * from q")``), polars (``pl.DataFrame(q)``) and
        pyarrow (``pa.RecordBatchReader.from_stream(q)``) read the result this way, with
        no copy of its Arrow columns. An in-memory frame is computed whole on the first
        read; a streamed input (`colbridge.io.stream_frame.StreamFrame`) is computed
        batch by batch as the consumer reads.
        """
        result = self.compute()
        if isinstance(result, pa.Table):
            table = result
        elif type(result).__module__.startswith("pandas"):
            # the result's columns, without the index (as `compute` gives them)
            table = pa.Table.from_pandas(result, preserve_index=False)
        else:  # polars
            table = result.to_arrow()
        return table.__arrow_c_stream__(requested_schema)

    def _run(self, adapter: FrameAdapter, report: ComputeReport, target: str) -> Any:
        from colbridge.runtime.execute import execute

        return execute(self._prepared(adapter), adapter, report, target, self._groups)

    # -- reporting ------------------------------------------------------------
    def report(
        self, *, source: bool = False, device: str = "auto", target: str | None = None
    ) -> PlanReport:
        """The plan as data (`colbridge.runtime.PlanReport`); `explain` renders it as text.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> q = cb.lazy(pa.table({"a": [1.0, 2.0]})).with_columns(z=cb.col("a") * 2)
        >>> [section.label for section in q.report(device="cpu").sections][:3]
        ['device', 'steps', 'segment 1']

        A plan that does not type is reported, not raised: its ``problems`` section
        (and `PlanReport.problems`) lists every problem `compute` would raise.
        """
        from colbridge.runtime.execute import Columns
        from colbridge.runtime.report import PlanReport, describe

        adapter = adapt_frame(self._frame)
        try:
            plan = self._prepared(adapter)
            plan.typed(Columns(adapter, []))  # cached: `describe` types nothing again
        except ColbridgeError as exc:
            return PlanReport.for_error(f"{adapter.kind} frame", self._steps, exc)
        return describe(plan, adapter, device=device, target=target, source=source,
                        last=self.last_report)  # fmt: skip

    def explain(
        self, *, source: bool = False, device: str = "auto", target: str | None = None
    ) -> str:
        """The plan as text: steps, passes and fused kernels, columns read, copies, device.

        ``source=True`` adds the generated kernel source: numba source for the CPU, CUDA
        C for a GPU (shown without one). ``target`` (``"cpu"`` or ``"cuda"``) picks the
        kernels to show; by default those of ``device`` (``device="cuda"`` shows CUDA C).

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> a = cb.col("a")
        >>> q = cb.lazy(pa.table({"a": [1.0, 2.0]})).with_columns(z=a - a.mean())
        >>> print(q.explain(device="cpu").splitlines()[4])
        segment 1: 2 pass(es) over the rows, 2 fused kernel(s); reads ['a']
        """
        return self.report(source=source, device=device, target=target).to_text()

    def __repr__(self) -> str:
        steps = ", ".join(s.describe() for s in self._steps) or "no steps"
        return f"<colbridge.LazyFrame over {type(self._frame).__name__}: {steps}>"

    def _display_report(self) -> PlanReport:
        from colbridge.runtime.report import PlanReport

        try:
            return self.report()
        except Exception as exc:  # a display must not raise; show why the plan fails
            return PlanReport.for_error(type(self._frame).__name__, self._steps, exc)

    def _repr_html_(self) -> str:
        """HTML for notebooks: the plan report as a table (HTML-escaped)."""
        return self._display_report().to_html()

    def _repr_markdown_(self) -> str:
        """Markdown for notebooks: the plan report as a nested list."""
        return self._display_report().to_markdown()


class Rolling:
    """``frame.rolling(index_column, period=...)``: call `agg` for each row's window.

    >>> import pyarrow as pa
    >>> import colbridge as cb
    >>> t = pa.table({"t": [1, 2, 3], "x": [1.0, 3.0, 5.0]})
    >>> cb.lazy(t).rolling("t", period="2i").agg(m=cb.col("x").mean()).compute().to_pylist()
    [{'t': 1, 'm': 1.0}, {'t': 2, 'm': 2.0}, {'t': 3, 'm': 4.0}]
    """

    def __init__(self, frame: LazyFrame, index: str, window: tuple[Any, Any, str]) -> None:
        self._frame = frame
        self._index = index
        self._window = window

    def agg(self, *exprs: Any, **named: Any) -> LazyFrame:
        """The index column, then each expression over each row's window (see `LazyFrame.rolling`).

        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"t": [1, 2, 3], "x": [1.0, 3.0, 5.0]})
        >>> cb.lazy(t).rolling("t", period="2i").agg(cb.col("x").max()).compute()["x"].to_pylist()
        [1.0, 3.0, 5.0]
        """
        period, offset, closed = self._window

        def windowed(e: Any) -> Expr:
            return as_expr(e).rolling(self._index, period=period, offset=offset, closed=closed)

        outputs = [windowed(e) for e in exprs]
        windows = {name: windowed(e) for name, e in named.items()}
        return self._frame.select(self._index, *outputs, **windows)


class GroupBy:
    """``frame.group_by(*keys)``: call `agg` for one row per group (nothing runs before compute).

    Examples
    --------
    >>> import pyarrow as pa
    >>> import colbridge as cb
    >>> t = pa.table({"g": [1, 1, 2], "x": [1.0, 3.0, 5.0]})
    >>> q = cb.lazy(t).group_by("g").agg(m=cb.col("x").mean())
    >>> q.compute().to_pylist()
    [{'g': 1, 'm': 2.0}, {'g': 2, 'm': 5.0}]
    """

    def __init__(self, frame: LazyFrame, keys: tuple[tuple[str, Node], ...]) -> None:
        self._frame = frame
        self._keys = keys

    def agg(self, *exprs: Any, **named: Any) -> LazyFrame:
        """One row per group: the key columns, then one column per expression.

        Each expression reduces every group to one value: ``sum mean min max std var
        count null_count len first last n_unique`` of elementwise expressions,
        combinations of them (``cb.col("a").sum() / cb.col("b").sum()``), and
        ``expr.filter(predicate).sum()`` for the rows of a group where a predicate holds.
        """
        keys = {name for name, _ in self._keys}

        def available() -> list[str]:  # `all()` in an aggregation: every column but the keys
            return [n for n in self._frame._names() if n not in keys]

        # positions (`nth`, `first()`) count the keys too, as in polars
        items = _named(exprs, named, available, self._frame._names)
        return self._frame._then(Step("group_by", items, self._keys))

    # -- polars' shorthands: one reduction of every column but the keys -------------

    def len(self, name: str | None = None) -> LazyFrame:
        """Each group's rows, in a column ``name`` (``"len"`` when None), as polars.

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": ["a", "b", "a"], "x": [1, 2, 3]})
        >>> df.gpu.group_by("g").len().compute().rows()
        [('a', 2), ('b', 1)]
        """
        from colbridge.expr.api import len as rows

        return self.agg(rows().alias("len" if name is None else name))

    def sum(self) -> LazyFrame:
        """Every other column's sum per group: ``agg(cb.all().sum())``.

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").sum().compute().rows()
        [(1, 4), (2, 5)]
        """
        return self._each("sum")

    def mean(self) -> LazyFrame:
        """Every other column's mean per group.

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").mean().compute().rows()
        [(1, 2.0), (2, 5.0)]
        """
        return self._each("mean")

    def median(self) -> LazyFrame:
        """Every other column's median per group.

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").median().compute().rows()
        [(1, 2.0), (2, 5.0)]
        """
        return self._each("median")

    def min(self) -> LazyFrame:
        """Every other column's smallest value per group.

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").min().compute().rows()
        [(1, 1), (2, 5)]
        """
        return self._each("min")

    def max(self) -> LazyFrame:
        """Every other column's largest value per group.

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").max().compute().rows()
        [(1, 3), (2, 5)]
        """
        return self._each("max")

    def n_unique(self) -> LazyFrame:
        """Every other column's count of distinct values per group (a null is one).

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").n_unique().compute().rows()
        [(1, 2), (2, 1)]
        """
        return self._each("n_unique")

    def first(self, *, ignore_nulls: bool = False) -> LazyFrame:
        """Every other column's first value per group (non-null with ``ignore_nulls``).

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").first().compute().rows()
        [(1, 1), (2, 5)]
        """
        return self._each("first", ignore_nulls=ignore_nulls)

    def last(self, *, ignore_nulls: bool = False) -> LazyFrame:
        """Every other column's last value per group (non-null with ``ignore_nulls``).

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1, 5, 3]})
        >>> df.gpu.group_by("g").last().compute().rows()
        [(1, 3), (2, 5)]
        """
        return self._each("last", ignore_nulls=ignore_nulls)

    def quantile(self, quantile: float, interpolation: str = "nearest") -> LazyFrame:
        """Every other column's quantile per group (see `Expr.quantile`).

        >>> import polars as pl
        >>> df = pl.DataFrame({"g": [1, 2, 1], "x": [1.0, 5.0, 3.0]})
        >>> df.gpu.group_by("g").quantile(0.5, "linear").compute().rows()
        [(1, 2.0), (2, 5.0)]
        """
        from colbridge.expr.selectors import all as every

        return self.agg(every().quantile(quantile, interpolation))

    def _each(self, method: str, *, ignore_nulls: bool = False) -> LazyFrame:
        from colbridge.expr.selectors import all as every

        columns = every().drop_nulls() if ignore_nulls else every()
        return self.agg(getattr(columns, method)())

    def __repr__(self) -> str:
        keys = ", ".join(f"{node!r}" for _, node in self._keys)
        return f"<colbridge.GroupBy by {keys} over {self._frame!r}>"


def _null_of(name: str, dtype: Any) -> Expr:
    """A null of polars type ``dtype``, named ``name`` (a statistic that type has none of)."""
    import polars as pl

    if dtype == pl.Null:
        return lit(None).alias(name)
    try:
        return lit(None, dtype=dtype).alias(name)
    except ColbridgeError:  # a type no literal takes (binary, decimal): none of its rows
        return col(name).filter(False).first()

