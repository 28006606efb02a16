"""Planning: queued steps → segments of typed, fused work. Pure: nothing is executed here.

A *segment* is what one sweep over the rows can do: reduction passes (level by
level, for reductions nested in reductions), then one elementwise pass that
computes every new column and the filter mask together. A new segment starts
only where a reduction must see rows that an earlier filter removed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from colbridge.errors import DuplicateColumnError, SchemaError
from colbridge.expr.nodes import (
    Agg,
    Binary,
    Column,
    Const,
    Literal,
    Node,
    TableRef,
    transform,
    walk,
)
from colbridge.plan.logical import Step
from colbridge.plan.typecheck import ColumnType, TypeChecker, is_scalar
from colbridge.types import DType
from colbridge.types.logical import Logical

__all__ = ["Segment", "SegmentSpec", "plan_segments", "type_segment"]


@dataclass
class SegmentSpec:
    """A segment before typing: untyped expressions over the segment's input columns."""

    env: dict[str, Node]
    order: list[str]
    mask: Node | None
    one_row: bool = False


@dataclass
class Segment:
    """A typed segment, ready for code generation."""

    inputs: list[str]
    order: list[str]
    passthrough: dict[str, str]
    outputs: list[tuple[str, Node]]
    mask: Node | None
    agg_levels: list[list[Agg]]
    types: dict[Node, DType]
    one_row: bool
    output_types: dict[str, DType] = field(default_factory=dict)
    #: outputs of a logical type (dates, strings, ...): their type, and for strings
    #: how their dictionary is built (see `colbridge.plan.logical_typing`)
    output_logical: dict[str, Logical] = field(default_factory=dict)
    output_dicts: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The segment's work as text (the header of its generated kernels)."""
        lines = [f"{name} = {node!r}" for name, node in self.outputs]
        if self.mask is not None:
            lines.append(f"filter: {self.mask!r}")
        return "\n".join(lines)

    @functools.cached_property
    def _shape(self) -> tuple[str, tuple[Literal, ...]]:
        params: dict[Node, int] = {}
        # a lookup table's contents never change the kernel, only its place and type do:
        # `s == "UA"` and `s == "AA"` share one compiled kernel
        tables: dict[TableRef, int] = {}

        def shape(node: Node) -> str:
            if isinstance(node, Agg):
                return repr(node)  # reductions are computed by their own kernels, verbatim
            if isinstance(node, Literal) and is_kernel_parameter(node):
                k = params.setdefault(node, len(params))
                return f"$p{k}:{node.dtype}"
            parts = []
            for f in fields(node):
                if not f.compare:
                    continue
                value = getattr(node, f.name)
                if isinstance(value, Node):
                    parts.append(shape(value))
                elif isinstance(value, tuple) and any(isinstance(v, Node) for v in value):
                    parts.append("[" + ", ".join(shape(v) for v in value) + "]")
                elif isinstance(value, TableRef):
                    k = tables.setdefault(value, len(tables))
                    parts.append(f"$t{k}:{value.dtype}:{value.nullable}")
                else:
                    parts.append(repr(value))
            return f"{type(node).__name__}({', '.join(parts)})"

        outputs = [(name, shape(node)) for name, node in self.outputs]
        mask = shape(self.mask) if self.mask is not None else None
        levels = [[repr(a) for a in level] for level in self.agg_levels]
        return repr((outputs, mask, levels, self.one_row)), tuple(params)  # type: ignore[arg-type]

    @property
    def signature(self) -> str:
        """The segment's typed work with its numbers left out; kernel cache keys use it.

        Numeric literals outside reductions are kernel parameters (`params`), so
        ``x * 2.5`` and ``x * 3.5`` share one compiled kernel.
        """
        return self._shape[0]

    @property
    def params(self) -> tuple[Literal, ...]:
        """The literals passed to the elementwise kernel as arguments, in argument order."""
        return self._shape[1]

    @property
    def kernel_text(self) -> str:
        """`text` for kernel headers, in the parameterised form.

        The source (and its on-disk cache file) is then the same whatever the literals.
        """
        if not self.params:
            return self.text
        return f"{self.signature}\nliterals are the arguments p0..p{len(self.params) - 1}"

    @functools.cached_property
    def param_values(self) -> tuple[Any, ...]:
        """`params` as NumPy scalars of their types: the kernel arguments, made once per plan."""
        return tuple(lit.dtype.numpy.type(lit.value) for lit in self.params)  # type: ignore[union-attr]


def is_kernel_parameter(node: Literal) -> bool:
    """A typed, non-null number: passed to kernels as an argument, not written into them."""
    return (node.value is not None and node.dtype is not None and not node.dtype.is_bool
            and not isinstance(node, Const))  # fmt: skip


def _substitute(node: Node, env: Mapping[str, Node]) -> Node:
    def fn(n: Node) -> Node:
        if isinstance(n, Column) and n.name in env:
            return env[n.name]
        return n

    return transform(node, fn)


def _has_agg(node: Node) -> bool:
    return any(isinstance(n, Agg) for n in walk(node))


def _referenced(node: Node) -> set[str]:
    return {n.name for n in walk(node) if isinstance(n, Column)}


def plan_segments(steps: Sequence[Step], input_names: Sequence[str]) -> list[SegmentSpec]:
    """Split the steps into segments and inline every step into its segment's expressions."""
    specs: list[SegmentSpec] = []
    env: dict[str, Node] = {n: Column(n) for n in input_names}
    order = list(input_names)
    mask: Node | None = None
    one_row = False

    def close() -> None:
        nonlocal env, order, mask, one_row
        specs.append(SegmentSpec(env, order, mask, one_row))
        env = {n: Column(n) for n in order}
        mask = None
        one_row = False

    for step in steps:
        exprs = [e for _, e in step.items]
        if mask is not None and any(_has_agg(e) for e in exprs):
            # Reductions after a filter must see only the rows it keeps.
            close()
        if one_row:
            close()
        if step.kind == "filter":
            pred = _substitute(step.items[0][1], env)
            mask = pred if mask is None else Binary("and", mask, pred)
            continue
        names = [name for name, _ in step.items]
        seen: set[str] = set()
        for name in names:
            if name in seen:
                msg = (
                    f"output name `{name}` appears more than once in `{step.kind}`; "
                    "give each output its own name with `.alias(...)` or `name=expr`"
                )
                raise DuplicateColumnError(msg)
            seen.add(name)
        substituted = [(name, _substitute(e, env)) for name, e in step.items]
        if step.kind == "with_columns":
            for name, e in substituted:
                if name not in env:
                    order.append(name)
                env[name] = e
        else:  # select
            env = dict(substituted)
            order = names
            one_row = bool(substituted) and all(is_scalar(e) for _, e in substituted)
    specs.append(SegmentSpec(env, order, mask, one_row))
    _prune(specs)
    return specs


def _prune(specs: list[SegmentSpec]) -> None:
    """Drop columns a later segment never reads."""
    for i in range(len(specs) - 2, -1, -1):
        later = specs[i + 1]
        needed: set[str] = set()
        for name in later.order:
            needed |= _referenced(later.env[name])
        if later.mask is not None:
            needed |= _referenced(later.mask)
        spec = specs[i]
        spec.order = [n for n in spec.order if n in needed]
        spec.env = {n: spec.env[n] for n in spec.order}


def type_segment(spec: SegmentSpec, schema: Mapping[str, ColumnType]) -> Segment:
    """Type a segment's expressions and sort its work into passthrough, outputs and reductions."""
    checker = TypeChecker(schema, list(schema))
    passthrough: dict[str, str] = {}
    outputs: list[tuple[str, Node]] = []
    output_types: dict[str, DType] = {}
    output_logical: dict[str, Logical] = {}
    output_dicts: dict[str, tuple[Any, ...]] = {}
    for name in spec.order:
        node = spec.env[name]
        if isinstance(node, Column) and node.name in schema:
            passthrough[name] = node.name
            dtype = schema[node.name].dtype
            if dtype is not None:
                output_types[name] = dtype
            continue
        typed = checker.check(node)
        if isinstance(typed, Column):
            passthrough[name] = typed.name
            output_types[name] = checker.dtype(typed)
            continue
        outputs.append((name, typed))
        output_types[name] = checker.dtype(typed)
        logical = checker.logical.get(typed)
        if logical is not None:
            output_logical[name] = logical
            if typed in checker.dicts:
                output_dicts[name] = checker.dicts[typed]
    mask = None
    if spec.mask is not None:
        mask = checker.check(spec.mask)
        if checker.dtype(mask) is not DType.BOOL:
            msg = (
                f"filter predicate `{spec.mask!r}` is {checker.dtype(mask)}, not boolean; "
                "compare it, e.g. `cb.col('a') > 0`"
            )
            raise SchemaError(msg)
        if isinstance(mask, Literal) and mask.value is True:
            mask = None
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs: list[str] = []
    for root in roots:
        for n in walk(root):
            if isinstance(n, Column) and n.name not in inputs:
                inputs.append(n.name)
    return Segment(
        inputs=inputs,
        order=list(spec.order),
        passthrough=passthrough,
        outputs=outputs,
        mask=mask,
        agg_levels=_agg_levels(roots),
        types=checker.types,
        one_row=spec.one_row,
        output_types=output_types,
        output_logical=output_logical,
        output_dicts=output_dicts,
    )


def _agg_levels(roots: Sequence[Node]) -> list[list[Agg]]:
    level_of: dict[Agg, int] = {}

    def level(node: Node) -> int:
        deepest = -1
        for n in walk(node):
            if isinstance(n, Agg) and n is not node:
                deepest = max(deepest, agg_level(n))
        return deepest

    def agg_level(agg: Agg) -> int:
        if agg not in level_of:
            level_of[agg] = level(agg.arg) + 1
        return level_of[agg]

    for root in roots:
        for n in walk(root):
            if isinstance(n, Agg):
                agg_level(n)
    if not level_of:
        return []
    levels: list[list[Agg]] = [[] for _ in range(max(level_of.values()) + 1)]
    for agg, lvl in level_of.items():
        levels[lvl].append(agg)
    return levels
