"""Kernel interface shared by every code generation target.

What a generated kernel reads and writes, independent of the target: its input
columns, the reduction results of earlier passes it reads (scalars), its outputs,
the failure kinds it counts and the per-block partials its reductions leave.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from colbridge.expr.nodes import Agg, Column, GroupAgg, Node, Reduction, children
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = [
    "ERR_NEGATIVE_EXPONENT",
    "ERR_STRICT_CAST",
    "N_ERR_KINDS",
    "AggSlot",
    "GroupedSpec",
    "InputSpec",
    "KernelSource",
    "OutputSpec",
    "ScalarSpec",
    "collect_grouped",
    "collect_inputs",
    "collect_scalars",
]

# Failure kinds a kernel can count; the runtime turns counts into errors.
ERR_STRICT_CAST = 0
ERR_NEGATIVE_EXPONENT = 1
N_ERR_KINDS = 2

@dataclass(frozen=True)
class InputSpec:
    """How one input column is passed to a kernel.

    Its dtype, whether it carries a validity bitmap, and whether NaN in it means
    null (read in place, no bitmap).
    """

    name: str
    dtype: DType
    nullable: bool
    nan_null: bool = False


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


def collect_inputs(
    roots: list[Node], types: dict[Node, DType], nulls: Nullability
) -> tuple[list[InputSpec], dict[str, int]]:
    """Columns the kernel reads row by row (not those only inside a reduction)."""
    specs: list[InputSpec] = []
    index: dict[str, int] = {}

    def visit(node: Node) -> None:
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
                specs.append(InputSpec(node.name, types[node], has_bitmap, nan_null))
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

    def visit(node: Node) -> None:
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

    def visit(node: Node) -> None:
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


