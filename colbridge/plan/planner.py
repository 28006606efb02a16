"""Planning: queued steps → segments of typed, fused work. Pure: nothing is executed here.

A *segment* is what one sweep over the rows can do: reduction passes (level by
level, for reductions nested in reductions), then one elementwise pass that
computes every new column and the filter mask together. A new segment starts
only where a reduction must see rows that an earlier filter removed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, NamedTuple

import numpy as np

from colbridge.errors import (
    ColumnNotFoundError,
    DuplicateColumnError,
    SchemaError,
    UnsupportedTypeError,
)
from colbridge.expr.nodes import (
    ROWS,
    Agg,
    Binary,
    Call,
    Cast,
    Check,
    Clip,
    Column,
    Const,
    Filtered,
    Gather,
    GroupAgg,
    KeySet,
    Literal,
    Node,
    Over,
    Reduction,
    Scan,
    SubtreeText,
    TableRef,
    children,
    clip_bound,
    deep_walk,
    fill_per_group,
    holds_window,
    push_window,
    reconstruct,
    transform,
    walk,
)
from colbridge.plan.logical import Step, names_after
from colbridge.plan.ordered_typing import scan_column
from colbridge.plan.typecheck import (
    ColumnType,
    TypeChecker,
    cast_can_fail,
    is_host_reduction,
    is_scalar,
)
from colbridge.types import DType
from colbridge.types.logical import NULL, Logical

__all__ = ["GroupBySpec", "LaggedRead", "Segment", "SegmentSpec", "plan_segments", "type_segment",
           "unknown_column"]


@dataclass(frozen=True)
class GroupBySpec:
    """The grouping of a ``group_by`` segment: its key set and the keys' output names.

    Such a segment's rows are the groups: its output is the key columns (each
    group's first key values) and one column per grouped reduction.
    """

    keys: KeySet
    names: tuple[str, ...]


class LaggedRead(NamedTuple):
    """A shift the kernels read in place (`Segment.lagged`)."""

    #: the frame column read
    source: str
    #: rows back (negative: ahead)
    rows: int
    #: the value of the rows shifted in, of the column's type (None: they are null)
    fill: bool | int | float | None


@dataclass
class SegmentSpec:
    """A segment before typing: untyped expressions over the segment's input columns."""

    env: dict[str, Node]
    order: list[str]
    mask: Node | None
    one_row: bool = False
    group_by: GroupBySpec | None = None
    #: the part of the mask polars applies before computing the outputs (see `plan_segments`)
    gate: Node | None = None


@dataclass
class Segment:
    """A typed segment, ready for code generation."""

    inputs: list[str]
    order: list[str]
    passthrough: dict[str, str]
    outputs: list[tuple[str, Node]]
    mask: Node | None
    agg_levels: list[list[Reduction]]
    types: dict[Node, DType]
    one_row: bool
    output_types: dict[str, DType] = field(default_factory=dict)
    #: key sets whose group ids the passes read: factorized before the first pass
    key_sets: list[KeySet] = field(default_factory=list)
    #: grouped reductions taken from the groups themselves, before the first pass
    #: (``len``, ``first``, ``last``, ``n_unique``: see `is_host_reduction`)
    host_aggs: list[GroupAgg] = field(default_factory=list)
    #: expressions that key sets and `host_aggs` need as whole columns: the outputs of `pre`
    host_names: dict[Node, str] = field(default_factory=dict)
    #: the segment computing `host_names` over the same rows, run first
    pre: Segment | None = None
    #: ordered operations the passes read as input columns, by those columns' names:
    #: scanned over the whole rows (their arguments from `pre`) before the first pass
    scans: dict[str, Scan] = field(default_factory=dict)
    #: of those that move strings: the dictionary spec of the codes they move (their
    #: argument's, or the one it reads through a string function); the scan pass makes
    #: each result's own dictionary, ``("scan", name)``, from it
    scan_dicts: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: set for a ``group_by`` segment: its rows out are the groups (typed keys)
    group_by: GroupBySpec | None = None
    #: Arrow types of grouped results no kernel computes (``first`` of a string column)
    opaque: dict[Node, Any] = field(default_factory=dict)
    #: Arrow types of output columns that have no kernel type (string keys and firsts)
    arrow_types: dict[str, Any] = field(default_factory=dict)
    #: a failing output (strict cast, negative integer power) counts only on the rows this
    #: predicate keeps: the part of the mask polars applies before computing the outputs
    #: (all of it, or None where polars computes them on every row first)
    gate: Node | None = None
    #: the passes a backend chose for this segment, by what picks them (its kernel among
    #: others): kept while the typed plan lives, so that a recurring compute chooses none
    chosen_passes: dict[Any, Any] = field(default_factory=dict, init=False, compare=False,
                                          repr=False)
    _texts: dict[tuple[Node, ...], str] = field(default_factory=dict, init=False,
                                                compare=False, repr=False)

    def reductions_text(self, reductions: Sequence[Node]) -> str:
        """The reductions of a pass as reports list them, written once per typed plan.

        Writing them (``repr``) took longer than a small compute's kernel; kernels are
        shared by plans of other numbers, so the text belongs to the plan, not to them.
        """
        key = tuple(reductions)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = ", ".join(repr(r) for r in reductions)
        return text

    @property
    def outputs_are_reductions(self) -> bool:
        """A one-row segment whose every output is a whole-column reduction as it is.

        ``select(a.sum(), b.max())``: the reductions are the results, made into one-row
        columns by the backend (`colbridge.backends.common.reduction_outputs`), with no
        elementwise pass after the reduction passes.
        """
        return (self.one_row and self.mask is None and self.group_by is None
                and bool(self.outputs)
                and all(isinstance(node, Agg) for _, node in self.outputs))  # fmt: skip

    @functools.cached_property
    def plain_passes(self) -> bool:
        """Whether the segment is whole-column reduction passes and an elementwise pass only.

        No groups, scans, filter or lookup tables: its passes read its input columns,
        literals and the values of its own reductions, so the passes a backend chose
        for the same variant run it again as they are
        (`colbridge.backends.cpu.run_recurring`). ``x - x.mean()``, ``select(a.sum(),
        b.max())`` and ``a * 2`` are; ``x.filter(y > 0)``, ``x.over("k")`` are not.
        """
        return not (self.key_sets or self.host_aggs or self.scans or self.group_by is not None
                    or self.mask is not None or self.tables or self.opaque) \
            and all(isinstance(r, Agg) for level in self.agg_levels for r in level)  # fmt: skip

    @functools.cached_property
    def lagged(self) -> dict[str, LaggedRead]:
        """Shifts the kernels read in place: by scan column, the frame column, lag and fill.

        ``x.shift(k)`` of a frame column over the whole rows is row ``i - k`` of ``x``
        (null where that row does not exist, or ``fill_value`` of ``x``'s own type): the
        passes read ``x`` itself ``k`` rows back (`colbridge.codegen.kernel.InputSpec.lag`)
        instead of a shifted copy made by the scan pass first. A stream's batches still
        run the scan, whose carry brings in the rows of the batch before
        (`colbridge.backends.scans`).
        """
        lagged: dict[str, LaggedRead] = {}
        for name, scan in self.scans.items():
            steps = _lag_steps(scan)
            if steps and name not in self.scan_dicts:
                assert isinstance(scan.arg, Column)
                lagged[name] = LaggedRead(scan.arg.name, steps, scan.options[1])
        return lagged

    @property
    def frame_inputs(self) -> list[str]:
        """The input columns read from the frame (not made by the segment's scans)."""
        return [name for name in self.inputs if name not in self.scans]

    @property
    def filters_first(self) -> bool:
        """Whether the whole filter applies before the outputs (they need only its rows)."""
        return self.mask is not None and self.gate == self.mask

    @functools.cached_property
    def host_functions(self) -> tuple[str, ...]:
        """Names of the compiled user functions the segment's kernels call (sorted).

        CUDA C cannot call a numba-compiled function: such a segment runs on the host
        CPU on every device, and `explain()` and the compute's report say so.
        """
        roots = [node for _, node in self.outputs] + [a for level in self.agg_levels
                                                      for a in level]  # fmt: skip
        roots += [self.mask] if self.mask is not None else []
        return tuple(sorted({n.func.name for root in roots for n in walk(root)
                             if isinstance(n, Call)}))  # fmt: skip

    @functools.cached_property
    def can_fail(self) -> bool:
        """Whether an output or the filter can raise on a row (strict casts, parses, powers).

        Where none can, computing the outputs on the kept rows only gives polars' answer
        whatever part of the filter polars applies first.
        """
        roots = [node for _, node in self.outputs]
        roots += [self.mask] if self.mask is not None else []
        for node in (n for root in roots for n in walk(root)):
            if isinstance(node, (Check, Call)) or (isinstance(node, Gather) and node.error):
                return True  # a compiled user function may raise on a row
            if isinstance(node, Cast) and node.strict:
                src, dst = self.types.get(node.arg), self.types.get(node)
                if src is None or dst is None or cast_can_fail(src, dst):
                    return True
            if isinstance(node, Binary) and node.op == "pow":
                result = self.types.get(node)
                if result is None or not result.is_float:
                    return True
        return False
    #: outputs of a logical type (dates, strings, ...): their type, and for strings
    #: how their dictionary is built (see `colbridge.plan.logical_typing`)
    output_logical: dict[str, Logical] = field(default_factory=dict)
    output_dicts: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def row_roots(self) -> tuple[Node, ...]:
        """What the elementwise pass computes, in its kernel's order: outputs, then filter."""
        roots = tuple(node for _, node in self.outputs)
        return (*roots, self.mask) if self.mask is not None else roots

    @property
    def text(self) -> str:
        """The segment's work as text (the header of its generated kernels)."""
        lines = [f"{name} = {node!r}" for name, node in self.outputs]
        if self.mask is not None:
            lines.append(f"filter: {self.mask!r}")
        return "\n".join(lines)

    @functools.cached_property
    def _shape(self) -> tuple[str, tuple[Literal, ...], tuple[TableRef, ...]]:
        params: dict[Node, int] = {}
        # a lookup table's contents never change the kernel, only its place and type do:
        # `s == "UA"` and `s == "AA"` share one compiled kernel
        tables: dict[TableRef, int] = {}

        def shape_of(node: Node) -> str:
            if isinstance(node, Clip):
                # bounds are numbers of the node's type: parameters as typed literals are
                dtype = self.types[node]
                bounds = [shape_of(clip_bound(b, dtype)) for b in (node.lower, node.upper)]
                return f"Clip({shape(node.arg)}, {', '.join(bounds)})"
            if _constant_divisor(node, self.types):
                # an integer divisor written into the kernel: the compiler turns the
                # division into a multiply and shift (a hardware divide per row otherwise)
                assert isinstance(node, Binary)
                return f"Binary({node.op!r}, {shape(node.left)}, {node.right!r})"
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

        # a subtree used in several places is written once, as `repr` writes it
        roots = [node for _, node in self.outputs]
        roots += [n for n in (self.mask, self.gate) if n is not None]
        roots += [agg for level in self.agg_levels for agg in level]
        shape = SubtreeText(shape_of, roots)
        outputs = [(name, shape(node)) for name, node in self.outputs]
        mask = shape(self.mask) if self.mask is not None else None
        # reductions too: `x.filter(y > 2).sum()` and `x.filter(y > 3).sum()` share kernels
        levels = [[shape(a) for a in level] for level in self.agg_levels]
        gate = shape(self.gate) if self.gate is not None else None
        key: tuple[Any, ...] = (outputs, mask, levels, self.one_row, gate)
        if self.group_by is not None:
            key += (repr(self.group_by.keys),)
        return repr(key), tuple(params), tuple(tables)  # type: ignore[arg-type]

    def group_numbers_of(self, results: frozenset[Node]) -> frozenset[int]:
        """The numbers of per-group results (`GroupAgg`) in the segment's trees.

        Which results hold no null group picks a kernel variant: cache keys name them
        by number (in the signature's order), the same in two plans of one signature
        whatever their literals. Results of other segments are left out.
        """
        numbers = self._group_numbers
        return frozenset(numbers[r] for r in results if r in numbers)

    @functools.cached_property
    def _group_numbers(self) -> dict[Node, int]:
        numbers: dict[Node, int] = {}
        roots = [node for _, node in self.outputs]
        roots += [n for n in (self.mask, self.gate) if n is not None]
        roots += [agg for level in self.agg_levels for agg in level]
        for root in roots:
            for node in walk(root):
                if isinstance(node, GroupAgg):
                    numbers.setdefault(node, len(numbers))
        return numbers

    @property
    def signature(self) -> str:
        """The segment's typed work with its numbers left out; kernel cache keys use it.

        Numeric literals are kernel parameters (`params`), so ``x * 2.5`` and ``x * 3.5``
        share one compiled kernel, and so do ``x.filter(y > 2).sum()`` and
        ``x.filter(y > 3).sum()``.
        """
        return self._shape[0]

    @property
    def tables(self) -> tuple[TableRef, ...]:
        """Every lookup table of the segment's kernels, in the order its signature numbers them.

        Each kernel of the segment takes all of them as arguments, so a kernel compiled
        for one plan runs another of the same signature with that plan's tables.
        """
        return self._shape[2]

    @property
    def params(self) -> tuple[Literal, ...]:
        """The literals passed as arguments, in argument order, to every kernel of the segment.

        Every reduction pass and the elementwise pass take all of them (as they take all
        of the segment's `tables`), whichever each one reads.
        """
        return self._shape[1]

    @property
    def kernel_text(self) -> str:
        """`text` for kernel headers, in the parameterised form.

        The source (and its on-disk cache file) is then the same whatever the literals
        and whatever the lookup tables hold: ``s == "UA"`` compiled in one process is
        found on disk for ``s == "AA"`` in the next.
        """
        if not self.params and not self.tables:
            return self.text
        given = []
        if self.params:
            given.append(f"literals are the arguments p0..p{len(self.params) - 1}")
        if self.tables:
            given.append(f"lookup tables $t0..$t{len(self.tables) - 1} are arguments")
        return "\n".join([self.signature, *given])

    @functools.cached_property
    def param_values(self) -> tuple[Any, ...]:
        """`params` as NumPy scalars of their types: the kernel arguments, made once per plan."""
        # a float literal beyond float32 is inf there, as in polars: no overflow warning
        with np.errstate(over="ignore"):
            return tuple(lit.dtype.numpy.type(lit.value)  # type: ignore[union-attr]
                         for lit in self.params)  # fmt: skip


def _constant_divisor(node: Node, types: Mapping[Node, DType]) -> bool:
    """Integer ``//`` or ``%`` by a literal: the literal is compiled in, not passed."""
    if not (isinstance(node, Binary) and node.op in ("floordiv", "truncdiv", "mod")):
        return False
    result = types.get(node)
    return (result is not None and result.is_integer and isinstance(node.right, Literal)
            and node.right.value is not None)  # fmt: skip


def is_kernel_parameter(node: Literal) -> bool:
    """A typed, non-null number: passed to kernels as an argument, not written into them."""
    return (node.value is not None and node.dtype is not None and not node.dtype.is_bool
            and not isinstance(node, Const))  # fmt: skip


def _substitute(node: Node, env: Mapping[str, Node]) -> Node:
    """``node`` with each column replaced by its expression in ``env``.

    A name ``env`` lacks stays a column: typing resolves it against the segment's
    inputs, and `unknown_column` refuses one an earlier step left out.
    """

    def fn(n: Node) -> Node:
        if isinstance(n, Column):
            if n.name in env:
                # the column itself (an input read as it is) keeps its object: trees
                # that share subtrees stay shared, and equal ones stay one object
                found = env[n.name]
                return n if isinstance(found, Column) and found == n else found
            if n.constant is not None:
                # `e`, `pi`, `nan`, `inf` of a string expression: no column has the name
                return Literal(n.constant)
        if isinstance(n, Over):
            keys = n.key_set
            if not keys.exprs and any(isinstance(m, Agg) for m in deep_walk(n.arg)):
                # a reduction over no keys (`x.sum().over(order_by="t")`) still gives its
                # value on every row in polars: the frame is one group, of a constant key
                keys = KeySet((Literal(1),), keys.order_by, keys.descending, keys.nulls_last)
            return push_window(n.arg, keys)
        return n

    return transform(node, fn)


def _conjuncts(node: Node) -> list[Node]:
    """The parts of ``a & b & ...`` (polars pushes each part of a filter on its own)."""
    if isinstance(node, Binary) and node.op == "and":
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _conjunction(parts: list[Node]) -> Node | None:
    out: Node | None = None
    for part in parts:
        out = part if out is None else Binary("and", out, part)
    return out


def _has_agg(node: Node) -> bool:
    """Whether ``node`` needs whole columns: a reduction, a window or an ordered operation."""
    return any(isinstance(n, (Agg, GroupAgg, Scan)) for n in deep_walk(node))


def _referenced(node: Node) -> set[str]:
    return {n.name for n in deep_walk(node) if isinstance(n, Column)}


def _made_first(exprs: Sequence[Node], env: Mapping[str, Node], *, grouped: bool) -> bool:
    """Whether ``exprs`` read a column of this segment that inlining would change.

    Inlining a column's expression where it is read is right for rows; not for:

    - a column made of one value: polars broadcasts ``with_columns(x=lit(2))`` to the
      frame's rows, so ``x.sum()`` later is ``2 * rows``, where ``lit(2).sum()`` is 2;
    - a column made by a reduction, window or ordered operation, read per group (in a
      grouping or under ``.over``): ``w = b.shift(1)`` is shifted over the whole frame,
      where ``b.shift(1)`` in an aggregation shifts within each group.

    Such a column is made first, in a segment of its own. ``grouped``: a grouping's
    keys and aggregations, every use of which is per group.
    """
    for e in exprs:
        windowed = grouped or any(isinstance(n, Over) for n in deep_walk(e))
        if not (windowed or _has_agg(e)):
            continue
        for name in _referenced(e):
            node = env.get(name)
            if node is None or isinstance(node, Column):
                continue
            if is_scalar(node) or (windowed and _has_agg(node)):
                return True
    return False


def _grouped_items(
    step: Step, env: Mapping[str, Node]
) -> tuple[SegmentSpec, dict[str, Node], list[str]]:
    """A ``group_by`` step as a segment over the rows, and the expressions over its groups.

    Every reduction in the aggregations is taken per group; the outermost ones
    become columns of the groups table (``__agg0__``, ...), and the aggregations
    are elementwise expressions over that table (``a.sum() / b.sum()`` divides two
    of its columns), fused into the next segment.
    """
    keys = [(name, _substitute(k, env)) for name, k in step.keys]
    keyset = KeySet(tuple(k for _, k in keys))
    names = [name for name, _ in keys]
    results: dict[Node, str] = {}
    windows: set[int] = set()  # the windows (`over`) inside the aggregations, as rebuilt

    def to_group(n: Node) -> Node:
        if isinstance(n, Agg):
            return GroupAgg(n.func, n.arg, keyset, n.ddof, n.options,
                            per_row=holds_window(n.arg, windows))  # fmt: skip
        if isinstance(n, GroupAgg):
            # a window inside an aggregation: within each group, by its keys as well (its
            # own order kept), and read on the group's rows, as polars evaluates it
            inner = tuple(e for e in n.keys.exprs if e not in keyset.exprs)
            out = replace(n, keys=KeySet(keyset.exprs + inner).ordered_like(n.keys))
            windows.add(id(out))
            return out
        if isinstance(n, Scan):  # an ordered operation inside an aggregation: per group
            inner = tuple(e for e in n.keys.exprs if e not in keyset.exprs)
            # its own order kept: a time-based window's `by` (`rolling_*_by`)
            merged = KeySet(keyset.exprs + inner).ordered_like(n.keys)
            return replace(n, keys=merged, per_row=n.per_row or holds_window(n.arg, windows))
        return fill_per_group(n, keyset)

    def outermost(n: Node, expr: Node) -> Node:
        if isinstance(n, GroupAgg):
            if n.keys != keyset or id(n) in windows:
                msg = (
                    f"`{expr!r}`: a window (`over`) as an aggregation of "
                    "`group_by(...).agg(...)` gives each group a list in polars; reduce it "
                    "to one value per group (`.max()`, `.first()`), or compute it in "
                    "`with_columns` before the `group_by`"
                )
                raise SchemaError(msg)
            name = results.get(n)
            if name is None:
                name = results[n] = _unused(f"__agg{len(results)}__", names)
            return Column(name)
        if isinstance(n, Column):
            msg = (
                f"`agg` expression `{expr!r}` uses column `{n.name}` outside a reduction, "
                "which would give each group a list; reduce it to one value per group, "
                f"e.g. `col('{n.name}').first()`, `.sum()` or `.mean()`"
            )
            raise SchemaError(msg)
        kids = children(n)
        return reconstruct(n, tuple(outermost(k, expr) for k in kids)) if kids else n

    over_groups: dict[str, Node] = {}
    for name, expr in step.items:
        grouped = transform(_substitute(expr, env), to_group)
        if name in over_groups or name in names:
            msg = (
                f"output name `{name}` appears more than once in `group_by(...).agg(...)`; "
                "give each output its own name with `.alias(...)` or `name=expr`"
            )
            raise DuplicateColumnError(msg)
        over_groups[name] = outermost(grouped, expr)
    if len(set(names)) != len(names):
        msg = f"`group_by` keys {names!r} repeat a name; give each key its own `.alias(...)`"
        raise DuplicateColumnError(msg)
    env_rows: dict[str, Node] = dict(keys)
    env_rows.update({name: node for node, name in results.items()})
    spec = SegmentSpec(env_rows, list(env_rows), None, False, GroupBySpec(keyset, tuple(names)))
    after: dict[str, Node] = {name: Column(name) for name in names}
    after.update(over_groups)
    return spec, after, [*names, *over_groups]


def _unused(name: str, taken: Sequence[str]) -> str:
    """``name``, or with underscores added until no name in ``taken`` is the same."""
    while name in taken:
        name = f"_{name}_"
    return name


def plan_segments(steps: Sequence[Step], input_names: Sequence[str]) -> list[SegmentSpec]:
    """Split the steps into segments and inline every step into its segment's expressions."""
    specs: list[SegmentSpec] = []
    env: dict[str, Node] = {n: Column(n) for n in input_names}
    order = list(input_names)
    mask: Node | None = None
    one_row = False
    # Failures of columns computed before a filter count only on the rows it keeps where
    # polars pushes the filter below them: each conjunct of the input columns alone, with
    # no reduction or window in it or in those columns, is pushed (the segment's `gate`);
    # the other conjuncts apply after the columns are computed on the rows the pushed ones
    # keep. Columns computed after a filter not wholly pushed start a segment of their
    # own, on the rows it keeps.
    computed: set[str] = set()
    pushed: list[Node] = []
    whole = True  # every conjunct so far was pushed: the gate is the whole mask

    def gate() -> Node | None:
        return mask if whole else _conjunction(pushed)

    def close() -> None:
        nonlocal env, order, mask, one_row, computed, pushed, whole
        specs.append(SegmentSpec(env, order, mask, one_row, gate=gate()))
        env = {n: Column(n) for n in order}
        mask = None
        one_row = False
        computed = set()
        pushed = []
        whole = True

    for step in steps:
        exprs = [e for _, e in step.items]
        if mask is not None and (step.kind == "group_by" or any(_has_agg(e) for e in exprs)):
            # Reductions after a filter must see only the rows it keeps.
            close()
        grouped = step.kind == "group_by"
        if one_row or _made_first([e for _, e in (*step.items, *step.keys)], env, grouped=grouped):
            close()
        if step.kind == "group_by":
            # the rows of what follows are the groups: the grouping ends its segment
            spec, env, order = _grouped_items(step, env)
            specs.append(spec)
            # the groups start afresh: nothing computed on them yet, no filter
            mask = None
            computed, pushed, whole = set(), [], True
            continue
        if step.kind == "filter":
            raw = step.items[0][1]
            pred = _substitute(raw, env)
            # with nothing computed yet, the whole filter comes first
            row_local = not computed or not any(_has_agg(env[name]) for name in computed)
            for part in _conjuncts(raw):
                sub = _substitute(part, env)
                if not computed or (row_local and not _has_agg(sub)
                                    and not (_referenced(part) & computed)):  # fmt: skip
                    pushed.append(sub)
                else:
                    whole = False
            mask = pred if mask is None else Binary("and", mask, pred)
            continue
        if mask is not None and not whole:
            close()  # computed after a filter polars did not wholly push: on its kept rows
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
        # one value per output as written: a column read is as long as the frame, even
        # where this segment made it of one value (`with_columns(x=lit(2))` broadcasts)
        as_columns = {name: Column(name) for name in env}
        one_value = bool(step.items) and all(
            is_scalar(_substitute(e, as_columns)) for _, e in step.items
        )
        if step.kind == "select" and mask is not None and one_value:
            # literals alone make one row whatever the filter keeps (polars): the
            # filter ends its segment, and the literals' row is not masked
            close()
        if step.kind == "with_columns":
            for name, e in substituted:
                if name not in env:
                    order.append(name)
                env[name] = e
        else:  # select
            env = dict(substituted)
            order = names
            one_row = one_value
            computed = set()
        computed |= {name for name, e in substituted if e != Column(name)}
    specs.append(SegmentSpec(env, order, mask, one_row, gate=gate()))
    _prune(specs)
    return specs


def unknown_column(steps: Sequence[Step], input_names: Sequence[str]) -> ColumnNotFoundError | None:
    """The error for the first column a step reads that is not there at that step, or None.

    polars resolves every step's names while planning, those of outputs no later step
    reads included; typing sees only what is computed (`_prune` and `select` drop the
    rest), so this walk over the names alone finds what it cannot.
    """
    names = list(input_names)
    for step in steps:
        there = set(names)
        for _, expr in (*step.keys, *step.items):
            for node in deep_walk(expr):
                if isinstance(node, Column) and node.name not in there \
                        and node.constant is None:  # fmt: skip
                    return ColumnNotFoundError.from_missing(node.name, names)
        names = names_after((step,), names)
    return None


def _prune(specs: list[SegmentSpec]) -> None:
    """Drop columns a later segment never reads."""
    for i in range(len(specs) - 2, -1, -1):
        later = specs[i + 1]
        needed: set[str] = set()
        for name in later.order:
            needed |= _referenced(later.env[name])
        if later.mask is not None:
            needed |= _referenced(later.mask)
        if later.group_by is not None:  # the keys are read even when not output
            for key in later.group_by.keys.exprs:
                needed |= _referenced(key)
        spec = specs[i]
        spec.order = [n for n in spec.order if n in needed]
        spec.env = {n: spec.env[n] for n in spec.order}


def type_segment(spec: SegmentSpec, schema: Mapping[str, ColumnType]) -> Segment:
    """Type a segment's expressions and sort its work into passthrough, outputs and reductions."""
    checker = TypeChecker(schema, list(schema))
    passthrough: dict[str, str] = {}
    outputs: list[tuple[str, Node]] = []
    output_types: dict[str, DType] = {}
    arrow_types: dict[str, Any] = {}
    group: GroupBySpec | None = None
    checker.one_row = spec.one_row
    if spec.group_by is not None:
        group = GroupBySpec(checker.key_set(spec.group_by.keys), spec.group_by.names)
        checker.allow_opaque = True  # `first` of a string column is an output here
    output_logical: dict[str, Logical] = {}
    output_dicts: dict[str, tuple[Any, ...]] = {}
    for name in spec.order:
        node = spec.env[name]
        if group is not None and name in group.names:
            # a key column: each group's first key values, taken after factorizing
            key = group.keys.exprs[group.names.index(name)]
            if key in checker.types:
                output_types[name] = checker.types[key]
            elif isinstance(key, Column):
                arrow_types[name] = schema[key.name].arrow_type
            continue
        if isinstance(node, Column) and node.name in schema:
            passthrough[name] = node.name
            try:
                dtype = schema[node.name].dtype
            except UnsupportedTypeError:
                # a column Arrow cannot hold (polars Int128), passed through untouched
                dtype = None
            if dtype is not None:
                output_types[name] = dtype
            continue
        typed = checker.output(node)
        if typed is None:  # polars' Null type: computed as nulls of `NULL.physical`
            typed = checker.typed(Literal(None, NULL.physical))
            output_logical[name] = NULL
        if isinstance(typed, Column):
            passthrough[name] = typed.name
            output_types[name] = checker.dtype(typed)
            continue
        outputs.append((name, typed))
        if typed in checker.opaque:
            arrow_types[name] = checker.opaque[typed]
        else:
            output_types[name] = checker.dtype(typed)
        logical = checker.logical.get(typed, output_logical.get(name))
        if logical is not None:
            output_logical[name] = logical
            if typed in checker.dicts:
                output_dicts[name] = checker.dicts[typed]
    mask = None
    if spec.mask is not None:
        mask = checker.check(spec.mask)
        if checker.dtype(mask) is not DType.BOOL or mask in checker.logical:
            # a string (or date) names its logical type, not the codes a kernel reads
            kind = checker.logical.get(mask) or checker.dtype(mask)
            msg = (
                f"filter predicate `{spec.mask!r}` is {kind}, not boolean; "
                "compare it, e.g. `col('a') > 0`"
            )
            raise SchemaError(msg)
        if isinstance(mask, Literal) and mask.value is True:
            mask = None
    gate = None
    if mask is not None and spec.gate is not None:
        gate = mask if spec.gate is spec.mask else checker.check(spec.gate)
    segment = _build_segment(outputs, mask, checker, spec.one_row, group, gate)
    if segment.mask is None:
        # an output that is a scan's result as it is: passed on, not copied by a kernel
        for name, node in list(segment.outputs):
            if isinstance(node, Column) and node.name in segment.scans:
                passthrough[name] = node.name
                segment.outputs.remove((name, node))
    segment.order = list(spec.order)
    segment.passthrough = passthrough
    segment.output_types = output_types
    segment.arrow_types = arrow_types
    segment.output_logical = output_logical
    segment.output_dicts = output_dicts
    return segment


def _build_segment(
    outputs: list[tuple[str, Node]],
    mask: Node | None,
    checker: TypeChecker,
    one_row: bool,
    group: GroupBySpec | None = None,
    gate: Node | None = None,
) -> Segment:
    """The segment computing typed ``outputs`` (and ``mask``, ``gate``) over one frame's rows."""
    scans: dict[str, Scan] = {}
    if any(isinstance(n, Scan) for _, node in outputs for n in walk(node)) or (
        mask is not None and any(isinstance(n, Scan) for n in walk(mask))
    ):
        memo: dict[Node, Node] = {}
        keep = frozenset(checker.scan_dicts)  # scans of strings: their names stay
        outputs = [(name, _scans_as_columns(node, checker.types, scans, memo, keep))
                   for name, node in outputs]  # fmt: skip
        whole = gate is mask
        if mask is not None:
            mask = _scans_as_columns(mask, checker.types, scans, memo, keep)
        if gate is not None:
            gate = mask if whole else _scans_as_columns(gate, checker.types, scans, memo, keep)
    if group is None:
        hoisted: dict[Node, Node] = {}
        outputs = [(name, _per_group(node, checker.types, hoisted)) for name, node in outputs]
        whole = gate is mask
        mask = _per_group(mask, checker.types, hoisted) if mask is not None else None
        if gate is not None:
            gate = mask if whole else _per_group(gate, checker.types, hoisted)
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs: list[str] = []
    key_sets: list[KeySet] = [group.keys] if group is not None and group.keys.exprs else []
    host_aggs: list[GroupAgg] = []
    ordered: list[KeySet] = []  # key sets with an order (`over(order_by=...)`)
    for root in roots:
        for n in walk(root):
            if isinstance(n, Column) and n.name not in inputs:
                inputs.append(n.name)
            if isinstance(n, GroupAgg):
                if n.keys.exprs and n.keys.grouping not in key_sets:
                    key_sets.append(n.keys.grouping)
                if n.keys.order_by and n.keys not in ordered:
                    ordered.append(n.keys)
                if is_host_reduction(n, checker.types) and n not in host_aggs:
                    host_aggs.append(n)
    # whole columns the grouping needs that no input holds: computed by a segment first
    host_names: dict[Node, str] = {}

    def need(node: Node) -> None:
        if not isinstance(node, Column) and node != ROWS and node not in host_names:
            host_names[node] = f"__host{len(host_names)}__"

    for scan in scans.values():
        if scan.keys.exprs and scan.keys.grouping not in key_sets:
            key_sets.append(scan.keys.grouping)
        if scan.keys.order_by and scan.keys not in ordered:
            ordered.append(scan.keys)
        need(scan.arg)
    for keys in key_sets + ordered:
        for key in keys.inputs:
            need(key)
    for agg in host_aggs:
        arg = agg.arg
        if isinstance(arg, Filtered):
            need(arg.predicate)
            arg = arg.arg
        if agg.func != "len":
            need(arg)
    pre = None
    if host_names:
        pre = _build_segment([(name, node) for node, name in host_names.items()], None,
                             checker, one_row=False)  # fmt: skip
        pre.order = list(host_names.values())
        pre.output_types = {name: checker.types[node] for node, name in host_names.items()}
        # keys of a logical type (a date, a string) come out as their type, not as codes
        pre.output_logical = {name: checker.logical[node] for node, name in host_names.items()
                              if node in checker.logical}  # fmt: skip
        pre.output_dicts = {name: checker.dicts[node] for node, name in host_names.items()
                            if node in checker.dicts}  # fmt: skip
    return Segment(
        inputs=inputs,
        order=[name for name, _ in outputs],
        passthrough={},
        outputs=outputs,
        mask=mask,
        agg_levels=_agg_levels(roots, checker.types),
        types=checker.types,
        one_row=one_row,
        key_sets=key_sets,
        host_aggs=host_aggs,
        host_names=host_names,
        pre=pre,
        scans=scans,
        scan_dicts={n: checker.scan_dicts[s] for n, s in scans.items() if s in checker.scan_dicts},
        group_by=group,
        opaque=dict(checker.opaque),
        gate=gate,
    )


def _scans_as_columns(
    node: Node,
    types: dict[Node, DType],
    scans: dict[str, Scan],
    memo: dict[Node, Node],
    keep: frozenset[Node] = frozenset(),
) -> Node:
    """``node`` with each outermost `Scan` read as an input column (recorded in ``scans``).

    Scans inside a scan's argument stay there: the ``pre`` segment computing the
    argument runs them first. So do scans inside the argument of a reduction taken
    from the groups (``x.diff().last()``): ``pre`` computes that argument whole.
    """
    hit = memo.get(node)
    if hit is not None:
        return hit
    if isinstance(node, GroupAgg) and is_host_reduction(node, types):
        return node
    if isinstance(node, Scan):
        lag = _lag_column(node, len(scans)) if node not in keep else None
        name = lag or scan_column(node)
        scans[name] = node
        out: Node = Column(name)
        types[out] = types[node]
    else:
        kids = children(node)
        out = node
        if kids:
            out = reconstruct(node, tuple(_scans_as_columns(k, types, scans, memo, keep)
                                          for k in kids))  # fmt: skip
            # a value read from the Arrow column itself (a string's `count` per group)
            # has no kernel type
            if out is not node and node in types:
                types[out] = types[node]
    memo[node] = out
    return out


def _lag_steps(scan: Scan) -> int:
    """The lag of a shift the kernels may read in place (`Segment.lagged`), else 0.

    ``x.shift(k)`` or ``x.shift(k, fill_value)`` of a frame column over the whole rows.
    Typing makes the fill of a shift a value of the column's own type (a fill that
    widens the type shifts a cast of the column, which is not read in place).
    """
    if (scan.func != "shift" or scan.keys.inputs or not scan.options[0]
            or not isinstance(scan.arg, Column)):  # fmt: skip
        return 0
    return int(scan.options[0])


def _lag_column(scan: Scan, index: int) -> str | None:
    """The input name of a shift the kernels may read in place (`Segment.lagged`).

    It names the column, the direction and whether the rows shifted in are filled, but
    not the rows or the fill value, so plans that differ only in those have one
    signature and share their kernels (both are kernel arguments). A shift of strings
    keeps its scan name: its dictionary is looked up by that name.
    """
    steps = _lag_steps(scan)
    if not steps:
        return None
    assert isinstance(scan.arg, Column)
    filled = ", filled" if scan.options[1] is not None else ""
    return f"__lag{index}__[{scan.arg.name}, {'back' if steps > 0 else 'ahead'}{filled}]"


def _group_keys_of(node: Node) -> KeySet | None:
    """The key set of an expression of one key set's group results alone, else None.

    Such an expression has one value per group: no column outside those results.
    """
    found: set[KeySet] = set()

    def visit(n: Node) -> bool:
        if isinstance(n, GroupAgg):
            found.add(n.keys.grouping)  # `first` in an order and `sum`: the same groups
            return True
        if isinstance(n, Column):
            return False
        if isinstance(n, (Agg, Literal)):
            return True  # one value for every row and group
        return all(visit(c) for c in children(n))

    if not visit(node) or len(found) != 1:
        return None
    keys = found.pop()
    return keys if keys.exprs else None


def _per_group(node: Node, types: dict[Node, DType], memo: dict[Node, Node]) -> Node:
    """Hoist expressions of group results out of the row pass: evaluated once per group.

    ``(x - m) / when(n > 1).then(sqrt(s / (n - 1)))`` with ``m``, ``n``, ``s`` per
    group becomes ``(x - m) / per_group(...)``: the division, test and square root
    run once per group (a small pass over the groups), and the row pass gathers
    one value instead of three.
    """
    hit = memo.get(node)
    if hit is not None:
        return hit
    out = node
    if not isinstance(node, (GroupAgg, Agg, Column, Literal)):
        keys = _group_keys_of(node)
        if keys is not None:
            out = GroupAgg("each", node, keys)
            types[out] = types[node]
        else:
            kids = children(node)
            if kids:
                out = reconstruct(node, tuple(_per_group(k, types, memo) for k in kids))
                if out is not node:
                    types[out] = types[node]
    memo[node] = out
    return out


def _agg_levels(roots: Sequence[Node], types: Mapping[Node, DType]) -> list[list[Reduction]]:
    """Reductions computed by kernels, by pass: a reduction runs after those inside it.

    Host reductions (`is_host_reduction`) are ready before the first pass, and what
    their arguments hold is computed with them (by the ``pre`` segment, which
    computes their argument whole): ``(x - y.filter(p).max()).first()``'s ``max`` is
    not a pass of this segment, whose scans are not its columns.
    """
    level_of: dict[Reduction, int] = {}

    def kernel_nodes(root: Node) -> list[Node]:
        out, seen, stack = [], set(), [root]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if isinstance(n, GroupAgg) and is_host_reduction(n, types):
                continue
            out.append(n)
            stack.extend(reversed(children(n)))
        return out

    def kernel_work(n: Node) -> bool:
        if isinstance(n, GroupAgg):
            return not is_host_reduction(n, types)
        return isinstance(n, Agg)

    def level(arg: Node) -> int:
        deepest = -1
        for n in walk(arg):  # the argument itself may be a reduction (a window's window)
            if kernel_work(n):
                assert isinstance(n, (Agg, GroupAgg))
                deepest = max(deepest, agg_level(n))
        return deepest

    def agg_level(agg: Reduction) -> int:
        if agg not in level_of:
            level_of[agg] = level(agg.arg) + 1
        return level_of[agg]

    for root in roots:
        for n in kernel_nodes(root):
            if kernel_work(n):
                assert isinstance(n, (Agg, GroupAgg))
                agg_level(n)
    if not level_of:
        return []
    levels: list[list[Reduction]] = [[] for _ in range(max(level_of.values()) + 1)]
    for agg, lvl in level_of.items():
        levels[lvl].append(agg)
    return levels
