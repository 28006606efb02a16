"""Kernel interface shared by every code generation target.

What a generated kernel reads and writes, independent of the target: its input
columns, the reduction results of earlier passes it reads (scalars), its outputs,
the failure kinds it counts and the per-block partials its reductions leave.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from colbridge.expr.nodes import (
    Agg,
    Call,
    Column,
    Gather,
    GroupAgg,
    Node,
    Reduction,
    Search,
    TableRef,
    children,
    walk,
)
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = [
    "ERR_NEGATIVE_EXPONENT",
    "ERR_STRICT_CAST",
    "ERR_STRICT_PARSE",
    "ERR_USER_FUNCTION",
    "N_ERR_KINDS",
    "N_HOST_ERR_KINDS",
    "AggSlot",
    "GroupedSpec",
    "InputSpec",
    "KernelSource",
    "OutputSpec",
    "ScalarSpec",
    "calls_functions",
    "collect_grouped",
    "collect_inputs",
    "collect_scalars",
    "collect_tables",
    "kernel_tables",
    "table_args",
    "table_key",
    "table_params",
]

_N = TypeVar("_N", bound=Node)

# Failure kinds a kernel can count; the runtime turns counts into errors.
ERR_STRICT_CAST = 0
ERR_NEGATIVE_EXPONENT = 1
ERR_STRICT_PARSE = 2  # a string that does not convert (strict `str.to_integer`, casts)
N_ERR_KINDS = 3  # the kinds a kernel of any target counts
ERR_USER_FUNCTION = 3  # a compiled user function raised (integer division by zero, ...)
#: the kinds a CPU (numba or NumPy) kernel counts: those, and the exceptions of compiled
#: user functions, which only the host calls (a segment calling one runs on the CPU)
N_HOST_ERR_KINDS = 4

@dataclass(frozen=True)
class InputSpec:
    """How one input column is passed to a kernel.

    Its dtype, whether it carries a validity bitmap, and whether NaN in it means
    null (read in place, no bitmap). ``lag`` (not 0): the kernel reads the column
    some rows back (1: ``x.shift(k)`` fused into the pass) or ahead (-1: a negative
    shift): row ``i`` is the column's row ``i - k``, null where that row does not
    exist. The bound array is the column itself and ``k`` is the argument
    ``lg<input index>`` after it (its size for the CPU, signed for CUDA), so one
    kernel serves every ``k`` of that direction; only the direction is in the source.
    ``fill`` (with a lag): the rows the shift moves in hold the argument ``fl<input
    index>`` (after ``lg``, of the column's type) and are valid, as ``shift(k, fill)``.
    """

    name: str
    dtype: DType
    nullable: bool
    nan_null: bool = False
    lag: int = 0
    fill: bool = False


@dataclass(frozen=True)
class ScalarSpec:
    """A reduction result passed to a later pass."""

    agg: Agg
    dtype: DType
    nullable: bool


@dataclass(frozen=True)
class GroupedSpec:
    """Per-group results of an earlier grouped pass, gathered by group id at each row.

    Passed as ``g{j}`` (one value per group) and, where it may be null, ``gv{j}``
    (one bool per group); the row's group id is input column ``ids`` (None: one group).
    """

    node: GroupAgg
    dtype: DType
    nullable: bool
    ids: str | None


@dataclass(frozen=True)
class OutputSpec:
    """One output column of an elementwise kernel."""

    name: str
    dtype: DType
    nullable: bool
    #: the filter's mask (a kernel's last output), told apart by this flag rather than
    #: by its name: a user's column may have any name
    is_mask: bool = False


@dataclass(frozen=True)
class AggSlot:
    """Where a reduction's per-block partials live in ``pf``/``pi``/``pu``.

    Grouped reductions use the same layout, one partial row per group (and chunk).
    """

    agg: Reduction
    arg_dtype: DType
    result_dtype: DType
    # column index in each partial array, by role ("count", "sum", "mean", "m2", ...)
    f: dict[str, int] = field(default_factory=dict)
    i: dict[str, int] = field(default_factory=dict)
    u: dict[str, int] = field(default_factory=dict)

    @property
    def folds_apart(self) -> bool:
        """Whether a role of this slot folds otherwise than by adding its partials up."""
        return any("best" in roles or "sum_hi" in roles or "mean" in roles
                   for roles in (self.f, self.i, self.u))  # fmt: skip


@dataclass
class KernelSource:
    """Generated source of one kernel plus what the runtime needs to call it."""

    kind: str  # "elementwise" | "reduce" | "grouped"
    source: str
    inputs: list[InputSpec]
    scalars: list[ScalarSpec]
    #: results of earlier grouped passes the kernel gathers (after the scalars)
    groups: list[GroupedSpec] = field(default_factory=list)
    outputs: list[OutputSpec] = field(default_factory=list)
    # dtypes of the literal arguments p0, p1, ... (after the scalars)
    literal_args: list[DType] = field(default_factory=list)
    slots: list[AggSlot] = field(default_factory=list)
    n_f: int = 0
    n_i: int = 0
    n_u: int = 0
    uses_err: bool = False
    err_messages: dict[int, str] = field(default_factory=dict)
    #: lookup tables, passed after the per-group results as ``lut{k}`` (values),
    #: ``lutv{k}`` (validity bytes, nullable tables only) and ``lutn{k}`` (length)
    tables: list[TableRef] = field(default_factory=list)
    #: compiled user functions the kernel calls, by the global name its source uses
    #: (bound when the module is loaded; such kernels are never cached on disk)
    functions: dict[str, Any] = field(default_factory=dict)
    #: the trees the kernel computes (reductions, or outputs then filter), in the
    #: order its generator was given them: `for_roots` renames its nodes after them
    roots: tuple[Node, ...] = ()

    def for_roots(self, roots: Sequence[Node]) -> KernelSource:
        """The kernel as one made for ``roots``: trees shaped as its own `roots`.

        Kernels are shared by plans of one shape (`Segment.signature`: literals and
        tables are arguments), so a kernel made for ``x.filter(y > 2).sum()`` runs
        ``x.filter(y > 3).sum()``. Its slots and specs name the reductions of the plan
        it was made for, and the runtime files results under those nodes: they are
        renamed to the running plan's (walking both trees side by side).
        """
        if len(roots) == len(self.roots) and all(map(operator.is_, roots, self.roots)):
            return self
        if not (self.slots or self.scalars or self.groups):
            return self  # nothing in it names a node
        renamed: dict[Node, Node] = {}
        seen: set[tuple[int, int]] = set()
        pairs = list(zip(self.roots, roots, strict=True))
        while pairs:
            old, new = pairs.pop()
            if old is new or (id(old), id(new)) in seen:
                continue
            seen.add((id(old), id(new)))
            renamed[old] = new
            pairs += zip(children(old), children(new), strict=True)

        def now(node: _N) -> _N:
            return renamed.get(node, node)  # type: ignore[return-value]  # of the same kind

        return replace(
            self,
            roots=tuple(roots),
            slots=[replace(s, agg=now(s.agg)) for s in self.slots],
            scalars=[replace(s, agg=now(s.agg)) for s in self.scalars],
            groups=[replace(g, node=now(g.node)) for g in self.groups],
        )


def collect_inputs(
    roots: list[Node], types: dict[Node, DType], nulls: Nullability
) -> tuple[list[InputSpec], dict[str, int]]:
    """Columns the kernel reads row by row (not those only inside a reduction)."""
    specs: list[InputSpec] = []
    index: dict[str, int] = {}

    seen: set[Node] = set()  # shared subtrees are visited once

    def visit(node: Node) -> None:
        if node in seen:
            return
        seen.add(node)
        if isinstance(node, Agg):
            return  # computed by an earlier pass, passed in as a scalar
        if isinstance(node, GroupAgg):
            # computed by an earlier pass; the row's group id picks its value
            if node.keys.ids_column is not None:
                visit(Column(node.keys.ids_column))
            return
        if isinstance(node, Column):
            if node.name not in index:
                index[node.name] = len(specs)
                has_bitmap = node.name in nulls.nullable_columns
                nan_null = node.name in nulls.nan_null_columns and types[node].is_float
                k = nulls.lags.get(node.name, 0)
                lag = (k > 0) - (k < 0)  # the direction; the rows are an argument
                fill = bool(lag) and node.name in nulls.fills
                specs.append(InputSpec(node.name, types[node], has_bitmap, nan_null, lag, fill))
            return
        for c in children(node):
            visit(c)

    for root in roots:
        visit(root)
    return specs, index


def collect_scalars(
    roots: list[Node], types: dict[Node, DType], nulls: Nullability, *, skip_inside_agg: bool
) -> tuple[list[ScalarSpec], dict[Agg, int]]:
    """Reduction results the kernel reads (the outermost ones, not those inside them)."""
    specs: list[ScalarSpec] = []
    index: dict[Agg, int] = {}

    seen: set[Node] = set()  # shared subtrees are visited once

    def visit(node: Node) -> None:
        if node in seen:
            return
        seen.add(node)
        if isinstance(node, Agg):
            if node not in index:
                index[node] = len(specs)
                specs.append(ScalarSpec(node, types[node], nulls.may_be_null(node)))
            return
        if isinstance(node, GroupAgg):
            return  # an earlier pass's result (see `collect_grouped`)
        for c in children(node):
            visit(c)

    for root in roots:
        visit(root)
    _ = skip_inside_agg
    return specs, index


def collect_grouped(
    roots: list[Node], types: dict[Node, DType], nulls: Nullability
) -> tuple[list[GroupedSpec], dict[GroupAgg, int]]:
    """Per-group results the kernel gathers (the outermost ones, not those inside them)."""
    specs: list[GroupedSpec] = []
    index: dict[GroupAgg, int] = {}

    seen: set[Node] = set()  # shared subtrees are visited once

    def visit(node: Node) -> None:
        if node in seen:
            return
        seen.add(node)
        if isinstance(node, Agg):
            return
        if isinstance(node, GroupAgg):
            if node not in index:
                index[node] = len(specs)
                spec = GroupedSpec(node, types[node], nulls.may_be_null(node),
                                   node.keys.ids_column)  # fmt: skip
                specs.append(spec)
            return
        for c in children(node):
            visit(c)

    for root in roots:
        visit(root)
    return specs, index




def calls_functions(roots: Sequence[Node]) -> bool:
    """Whether computing ``roots`` row by row calls a compiled user function."""
    return any(isinstance(n, Call) for root in roots for n in walk(root))


def collect_tables(roots: list[Node]) -> list[TableRef]:
    """The lookup tables a kernel reads row by row, in first-use order.

    Not those of reductions the kernel receives as results of earlier passes (`Agg`,
    `GroupAgg` nodes below a root); a reduction kernel's roots are their arguments.
    """
    found: dict[TableRef, None] = {}

    seen: set[Node] = set()  # shared subtrees are visited once

    def visit(node: Node) -> None:
        if node in seen:
            return
        seen.add(node)
        if isinstance(node, (Agg, GroupAgg)):
            return
        if isinstance(node, (Gather, Search)):
            found.setdefault(node.table)
        for c in children(node):
            visit(c)

    for root in roots:
        visit(root)
    return list(found)


def kernel_tables(roots: list[Node], tables: Sequence[TableRef]) -> list[TableRef]:
    """The table arguments of a kernel computing ``roots``: ``tables`` when given, else its own.

    A backend passes a segment's `tables` (every table of the segment, in the order its
    signature numbers them) to each kernel of the segment and binds the running
    segment's tables in that order: a compiled kernel is shared by plans that differ
    only in their tables' contents, so the tables recorded with it are never bound.
    """
    return list(tables) if tables else collect_tables(roots)


def table_params(tables: Sequence[TableRef]) -> list[tuple[str, TableRef, str]]:
    """Argument names of lookup tables, in order: (name, table, role ``data|valid|length``)."""
    out: list[tuple[str, TableRef, str]] = []
    for k, table in enumerate(tables):
        out.append((f"lut{k}", table, "data"))
        if table.nullable:
            out.append((f"lutv{k}", table, "valid"))
        out.append((f"lutn{k}", table, "length"))
    return out


@functools.lru_cache(maxsize=4096)
def table_key(table: TableRef) -> str:
    r"""The name under which the runtime hands a table's values to a backend.

    Column names are what users chose; this one starts with a NUL byte, which no
    frame library lets a column name begin with in practice. It spells out the
    whole table, so two tables never share one (their hashes may: ``hash(-1)`` is
    ``hash(-2)`` in CPython).

    >>> from colbridge.types import DType
    >>> table_key(TableRef(("col", "s"), ("get", -1), DType.BOOL))
    "\x00table(('col', 's'), ('get', -1), <DType.BOOL: 'bool'>, False)"
    """
    return "\0table" + repr((table.source, table.recipe, table.dtype, table.nullable))


def table_args(table: TableRef, values: Any) -> list[Any]:
    """A table's kernel arguments: values, validity bytes (nullable tables) and length.

    ``values`` is an Arrow array of the table's type (nulls where an entry has no
    value). An empty table gets one zero entry, so an index clamped to 0 reads memory.
    """
    dtype = table.dtype.numpy
    n = len(values)
    if n == 0:
        data = np.zeros(1, dtype=dtype)
        valid = np.zeros(1, dtype=np.uint8)
    else:
        data = np.asarray(values.fill_null(False if table.dtype.is_bool else 0)
                          .to_numpy(zero_copy_only=False), dtype=dtype)  # fmt: skip
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    args: list[Any] = [np.ascontiguousarray(data)]
    if table.nullable:
        args.append(np.ascontiguousarray(valid))
    args.append(np.int64(max(n, 1)))
    return args
