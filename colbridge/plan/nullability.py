"""Nullability: which typed nodes can produce a null, given which inputs hold nulls.

Kernels come in variants with and without validity handling; this decides,
per node, whether a validity bit has to be computed at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from colbridge.expr.nodes import (
    BITWISE_AGGS,
    Agg,
    Binary,
    Call,
    Cast,
    Clip,
    Coalesce,
    Column,
    FillNan,
    Filtered,
    Gather,
    GroupAgg,
    Literal,
    Node,
    Unary,
    When,
    children,
)
from colbridge.plan.typecheck import cast_can_fail
from colbridge.types import DType

if TYPE_CHECKING:
    from colbridge.plan.planner import LaggedRead

__all__ = ["Nullability"]

# Reductions that are null on empty or all-null input (or one value, for std/var).
NULLABLE_AGGS = frozenset({"mean", "min", "max", "std", "var", "median", "quantile", "any",
                           "all", "arg_min", "arg_max"}) | BITWISE_AGGS  # fmt: skip


class Nullability:
    """Answers `may_be_null(node)` for typed nodes, memoised."""

    def __init__(
        self,
        types: Mapping[Node, DType],
        nullable_columns: frozenset[str],
        nan_null_columns: frozenset[str] = frozenset(),
        valid_groups: frozenset[Node] = frozenset(),
        lagged: Mapping[str, LaggedRead] | None = None,
    ) -> None:
        self.types = types
        # columns with a validity bitmap holding nulls
        self.nullable_columns = nullable_columns
        # float columns where NaN means null (pandas NumPy-backed floats)
        self.nan_null_columns = nan_null_columns
        # grouped results already computed with no null group (their kernels read no validity)
        self.valid_groups = valid_groups
        # input columns the kernels read a number of rows back (a shift fused into the
        # pass, `Segment.lagged`), by input name: the rows back (negative: ahead), and the
        # fill values of those whose rows shifted in are filled; the others are null there,
        # whatever the column
        self.lagged: Mapping[str, LaggedRead] = lagged or {}
        self.lags: dict[str, int] = {name: read.rows for name, read in self.lagged.items()}
        self.fills: dict[str, Any] = {name: read.fill for name, read in self.lagged.items()
                                      if read.fill is not None}  # fmt: skip
        self._memo: dict[Node, bool] = {}

    def may_be_null(self, node: Node) -> bool:
        """True when some row of ``node`` may be null."""
        hit = self._memo.get(node)
        if hit is None:
            hit = self._compute(node)
            self._memo[node] = hit
        return hit

    def _compute(self, node: Node) -> bool:
        if isinstance(node, Column):
            return (node.name in self.nullable_columns or node.name in self.nan_null_columns
                    or (node.name in self.lags and node.name not in self.fills))  # fmt: skip
        if isinstance(node, Literal):
            return node.value is None
        if isinstance(node, Agg):
            return node.func in NULLABLE_AGGS
        if isinstance(node, GroupAgg):
            if node in self.valid_groups:
                return False
            if node.func == "each":
                return self.may_be_null(node.arg)
            # a group has rows, but they may all be null (or filtered out)
            return node.func in NULLABLE_AGGS or node.func in ("first", "last")
        if isinstance(node, Filtered):
            return self.may_be_null(node.arg)
        if isinstance(node, Unary) and node.op in ("is_null", "is_not_null"):
            return False
        if isinstance(node, Binary):
            either = self.may_be_null(node.left) or self.may_be_null(node.right)
            if node.op in ("floordiv", "truncdiv", "mod") and self.types[node].is_integer:
                # Integer division by zero gives null, as in polars.
                divisor = node.right
                return either or not (isinstance(divisor, Literal) and divisor.value not in (0,))
            return either
        if isinstance(node, Cast):
            src = self.types[node.arg]
            return self.may_be_null(node.arg) or (
                not node.strict and cast_can_fail(src, node.dtype)
            )
        if isinstance(node, When):
            return self.may_be_null(node.then) or self.may_be_null(node.otherwise)
        if isinstance(node, Coalesce):
            return all(self.may_be_null(a) for a in node.args)
        if isinstance(node, FillNan):
            return self.may_be_null(node.arg) or self.may_be_null(node.value)
        if isinstance(node, Clip):
            return self.may_be_null(node.arg)
        if isinstance(node, Call) and not node.func.skip_nulls:
            # the function sees the nulls and decides: null only if it returns validity
            return bool(node.func.returns_validity(tuple(self.types[a] for a in node.args)))
        if isinstance(node, Gather):  # a table entry without a value is null (or an error)
            return self.may_be_null(node.index) or (node.table.nullable and not node.error)
        return any(self.may_be_null(c) for c in children(node))
