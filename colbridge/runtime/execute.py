"""Runtime: a plan prepared once, typed per input schema, run segment by segment on a backend.

Stage: runtime. `prepare` turns queued steps into untyped segments (cached by
steps and column names); `PreparedPlan.typed` types them against the columns
of one frame (cached by the input types); `execute` fetches the columns a
segment reads, runs it on the chosen backend and builds the result frame.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from colbridge.backends import cpu, get_backend
from colbridge.backends.common import (
    RunStats,
    SegmentResult,
    finalize_reduction,
    fold_partials,
)
from colbridge.backends.device import DeviceChoice, device_context, resolve_device
from colbridge.backends.groups import (
    GroupIds,
    Grouping,
    dictionary_encoded,
    factorize,
    host_reduction,
    integer_values,
    one_group,
    take,
)
from colbridge.backends.rolling_by import ewm_mean_by, rolling_by
from colbridge.backends.scans import (
    ScanStreams,
    StringRanks,
    check_weighted,
    host_scan,
    permuted,
    rows_in_order,
    run_scan,
    shifted_in_place,
    with_dictionary,
)
from colbridge.codegen.cuda_scans import device_scan_reason
from colbridge.codegen.kernel import AggSlot
from colbridge.columns.frames import ArrowTableAdapter, FrameAdapter, adapt_frame
from colbridge.errors import (
    ColbridgeError,
    DeviceError,
    DeviceFallbackWarning,
    KernelCompileError,
    UnsupportedOperationError,
    UnsupportedTypeError,
)
from colbridge.expr.nodes import (
    BY_ORDER_FUNCS,
    FOLDED_HOST_AGGS,
    HOST_SCANS,
    ROLLING_BY_FUNCS,
    ROWS,
    STRING_COMPARISONS,
    Agg,
    Column,
    Filtered,
    Function,
    GroupAgg,
    KeySet,
    Literal,
    Node,
    Scan,
    children,
    deep_walk,
    rolling_weights,
)
from colbridge.memory import one_array
from colbridge.plan.logical import Step
from colbridge.plan.planner import (
    LaggedRead,
    Segment,
    SegmentSpec,
    plan_segments,
    type_segment,
    unknown_column,
)
from colbridge.plan.row_changing import filter_changing_rows
from colbridge.plan.typecheck import ColumnType
from colbridge.runtime.tables import (
    TableBuilder,
    enum_failures_named,
    finish_output,
    segment_tables,
)
from colbridge.types import dtype_from_arrow
from colbridge.types.dtypes import type_key
from colbridge.types.logical import NULL, Logical, logical_from_arrow

__all__ = [
    "Columns",
    "ComputeReport",
    "Partials",
    "PreparedPlan",
    "TypedPlan",
    "execute",
    "on_device",
    "prepare",
    "reduction_partials",
]

_CACHE_MAX = 512
_LOCK = threading.Lock()
#: dictionary encodings of plain string columns, by the identity of their Arrow buffers
#: (each entry keeps its source array alive, so no other buffer takes its address)
_ENCODED: OrderedDict[Any, tuple[pa.Array, pa.Array]] = OrderedDict()
_ENCODED_MAX = 16
_PREPARED: OrderedDict[Any, PreparedPlan] = OrderedDict()
_TYPED: OrderedDict[Any, TypedPlan] = OrderedDict()


@dataclass
class ComputeReport:
    """What one compute did: device, kernels, cache use and copies."""

    device: DeviceChoice | None = None
    stats: RunStats = field(default_factory=RunStats)
    copies: list[str] = field(default_factory=list)


class Columns:
    """Arrow columns of one frame, fetched once per compute, single-chunk."""

    def __init__(self, adapter: FrameAdapter, copies: list[str]) -> None:
        self.adapter = adapter
        self.copies = copies
        self._arrays: dict[str, pa.Array] = {}

    def get(self, name: str) -> pa.Array:
        """The column as one Arrow array (several chunks are combined: a copy, reported)."""
        array = self._arrays.get(name)
        if array is None:
            chunked = self.adapter.column(name)
            self.copies.extend(self.adapter.copy_notes(name))
            if chunked.num_chunks == 1:
                array = chunked.chunk(0)
            elif chunked.num_chunks == 0:
                array = pa.nulls(0, chunked.type)  # pa.array([]) would import pandas
            else:
                self.copies.append(
                    f"column `{name}`: {chunked.num_chunks} chunks combined into one (a copy)"
                )
                array = chunked.combine_chunks()
            if pa.types.is_dictionary(array.type) and pa.types.is_null(array.type.value_type):
                # a dictionary of no values (pyarrow's encoding of nulls only): every row
                # null, the Null column polars reads it as
                array = pa.nulls(len(array))
            self._arrays[name] = array
        return array

    def kernel_array(self, name: str) -> pa.Array:
        """The column as a kernel reads it: a string column as dictionary codes.

        A plain string column is dictionary-encoded once per compute (a copy, reported);
        a dictionary column is read as it is (its codes), unless its dictionary holds
        nulls, which are moved into the codes (a copy, reported).
        """
        array = self.get(name)
        logical = logical_from_arrow(array.type)
        if logical is None or not logical.is_string:
            return array
        key = "\0codes:" + name
        hit = self._arrays.get(key)
        if hit is not None:
            return hit
        if pa.types.is_dictionary(array.type):
            if array.dictionary.null_count == 0:
                return array
            import pyarrow.compute as pc  # on first use: its import is slow

            index_type = array.type.index_type
            encoded = pc.dictionary_encode(array.dictionary_decode())
            array = pa.DictionaryArray.from_arrays(encoded.indices.cast(index_type),
                                                   encoded.dictionary)  # fmt: skip
            self.copies.append(f"column `{name}`: nulls moved from its dictionary into its "
                               "codes (a copy)")  # fmt: skip
        else:
            array = _encode(name, array, self.copies)
        self._arrays[key] = array
        return array

    def nan_null(self, names: Iterable[str]) -> frozenset[str]:
        """Those of ``names`` whose NaN means null (pandas NumPy-backed floats)."""
        return frozenset(n for n in names if self.adapter.nan_is_null(n))

    def get_as_arrow_nulls(self, name: str) -> pa.Array:
        """The column with NaN turned into nulls where NaN means null (a new bitmap)."""
        array = self.get(name)
        if self.adapter.nan_is_null(name) and pa.types.is_floating(array.type):
            return pa.array(array.to_numpy(zero_copy_only=False), from_pandas=True)
        return array

    def schema(self, names: Iterable[str]) -> dict[str, ColumnType]:
        """Planner types of ``names``."""
        out = {}
        for name in names:
            arrow_type = self.get(name).type
            out[name] = ColumnType(name, dtype_from_arrow(arrow_type), arrow_type)
        return out


def _encode(name: str, array: pa.Array, copies: list[str]) -> pa.Array:
    """A plain string column dictionary-encoded, reusing the encoding of an earlier compute.

    Arrow buffers never change, so the same buffers at the same offset and length encode
    the same way: a frame computed again (a notebook cell rerun, a recurring plan) pays
    for the encoding once.
    """
    key = (tuple(b.address if b is not None else 0 for b in array.buffers()), array.offset,
           len(array), str(array.type))  # fmt: skip
    with _LOCK:
        hit = _ENCODED.get(key)
        if hit is not None:
            _ENCODED.move_to_end(key)
    if hit is not None:
        copies.append(f"column `{name}`: dictionary encoding of an earlier compute reused")
        return hit[1]
    encoded = dictionary_encoded(array)
    copies.append(
        f"column `{name}`: dictionary-encoded once for the kernels "
        f"({len(encoded.dictionary)} distinct strings; a copy)"
    )
    with _LOCK:
        _ENCODED[key] = (array, encoded)
        while len(_ENCODED) > _ENCODED_MAX:
            _ENCODED.popitem(last=False)
    return encoded


class _LazySchema(dict[str, ColumnType]):
    """Schema of a frame whose column types are fetched only when asked for."""

    def __init__(self, names: list[str], columns: Columns) -> None:
        super().__init__()
        self._names = names
        self._columns = columns

    def __contains__(self, key: object) -> bool:
        return key in self._names

    def __iter__(self) -> Any:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key not in self._names:
            return default
        return self[key]

    def __getitem__(self, key: str) -> ColumnType:
        if not dict.__contains__(self, key):
            dict.__setitem__(self, key, self._columns.schema([key])[key])
        return dict.__getitem__(self, key)

    def keys(self) -> Any:
        return list(self._names)


@dataclass
class TypedPlan:
    """Segments typed against one input schema: what the backends run."""

    segments: list[Segment]


@dataclass
class PreparedPlan:
    """Queued steps split into untyped segments, for frames with these column names."""

    steps: tuple[Step, ...]
    names: tuple[str, ...]
    specs: list[SegmentSpec]
    #: input columns some segment's kernels read (their types key the typed plan)
    typed_inputs: tuple[str, ...]
    _typed: dict[Any, TypedPlan] = field(default_factory=dict, repr=False)

    def typed(self, columns: Columns) -> TypedPlan:
        """The plan typed for the columns of one frame (cached by their Arrow types).

        A plan that does not type raises every problem at once (`PlanProblemsError`),
        or its one problem's error as it is.
        """
        try:
            schema_key = tuple(type_key(columns.get(n).type) for n in self.typed_inputs)
        except ColbridgeError as exc:  # a column no kernel can read (a pandas object column)
            found = self._located(exc, columns)
            if found is exc:
                raise
            raise found from None
        local = self._typed.get(schema_key)
        if local is not None:
            return local
        key = (self.steps, self.names, schema_key)
        with _LOCK:
            cached = _TYPED.get(key)
            if cached is not None:
                _TYPED.move_to_end(key)
        if cached is None:
            try:
                cached = _type_plan(self.specs, self.names, columns)
            except ColbridgeError as exc:
                found = self._located(exc, columns)
                if found is exc:
                    raise
                raise found from None
            # a name no computed expression reads, which typing never saw
            missing = unknown_column(self.steps, self.names)
            if missing is not None:
                raise self._located(missing, columns) from None
            with _LOCK:
                _TYPED[key] = cached
                while len(_TYPED) > _CACHE_MAX:
                    _TYPED.popitem(last=False)
        self._typed[schema_key] = cached
        return cached

    def _located(self, exc: ColbridgeError, columns: Columns) -> ColbridgeError:
        """What typing raises, now that it raised ``exc``: every problem of the plan at once."""
        # off the happy path only (and `problems` imports this module)
        from colbridge.runtime.problems import located

        return located(exc, self.steps, self.names, columns)


def _type_plan(specs: list[SegmentSpec], names: tuple[str, ...], columns: Columns) -> TypedPlan:
    return TypedPlan(type_specs(specs, names, columns)[0])


def type_specs(
    specs: list[SegmentSpec], names: tuple[str, ...], columns: Columns
) -> tuple[list[Segment], Mapping[str, ColumnType]]:
    """Segments typed one after another, and the types of the columns the last one makes."""
    schema: Mapping[str, ColumnType] = input_schema(names, columns)
    segments = []
    for spec in specs:
        segment = type_segment(spec, schema)
        segments.append(segment)
        schema = {n: _next_column_type(n, segment, schema) for n in segment.order}
    return segments, schema


def input_schema(names: Iterable[str], columns: Columns) -> Mapping[str, ColumnType]:
    """The planner types of a frame's columns, each fetched only when asked for."""
    return _LazySchema(list(names), columns)


def _next_column_type(name: str, segment: Segment, schema: Mapping[str, ColumnType]) -> ColumnType:
    """What the next segment knows of column ``name`` after ``segment`` made it."""
    source = segment.passthrough.get(name)
    if source is not None and source not in segment.scans:
        # kept as it was: its Arrow type too (dictionaries, timestamps)
        try:
            info = schema[source]
        except UnsupportedTypeError:
            info = None  # a column Arrow cannot hold (polars Int128), passed through untouched
        if info is not None:
            return ColumnType(name, info.dtype, info.arrow_type)
    logical = segment.output_logical.get(name)
    if logical is not None:
        return ColumnType(name, None, logical.arrow)
    dtype = segment.output_types.get(name)
    return ColumnType(name, dtype, dtype or segment.arrow_types.get(name))


def _read_by_kernels(spec: SegmentSpec) -> list[str]:
    roots = list(spec.env.values()) + ([spec.mask] if spec.mask is not None else [])
    names: list[str] = []
    if spec.group_by is not None:  # the keys' types decide how they are factorized
        roots += list(spec.group_by.keys.exprs)
    for root in roots:
        if isinstance(root, Column) and spec.group_by is None:
            continue  # a passthrough column is not read by a kernel
        for n in deep_walk(root):
            if isinstance(n, Column) and n.name not in names:
                names.append(n.name)
    return names


def _typed_inputs(specs: list[SegmentSpec], names: tuple[str, ...]) -> tuple[str, ...]:
    """The input columns whose types the typed plan depends on.

    Those a segment's kernels read, the first segment's or a later one's where the
    column reached it unchanged (passed through, perhaps renamed): after a filter
    the next segment reads the frame's own columns, and a frame whose column has
    another type must not reuse the plan typed for the first.
    """
    held = {n: n for n in names}  # a segment's input column -> the frame column it still is
    out: list[str] = []
    for spec in specs:
        for n in _read_by_kernels(spec):
            source = held.get(n)
            if source is not None and source not in out:
                out.append(source)
        held = {
            name: held[e.name]
            for name, e in spec.env.items()
            if isinstance(e, Column) and e.name in held
        }
    return tuple(out)


#: Python frames planning takes per level of an expression (typing, lowering, hashing)
_FRAMES_PER_LEVEL = 8
#: the most a plan raises the interpreter's recursion limit to
_MOST_FRAMES = 50_000


def _room_to_nest(steps: tuple[Step, ...]) -> None:
    """Raise Python's recursion limit for a plan whose expressions nest deeply.

    Statements that build on each other (``x = sqrt(x) * 2`` a hundred times) nest
    as deep as all of them together once substituted, which the planner's recursive
    passes follow; the sum over the steps of each step's deepest expression bounds that
    (the expressions of one step read the step before, never each other, so a step of
    many columns nests no deeper than its deepest one). The limit is only ever raised
    (never lowered again), so a plan on another thread is not cut short.
    """
    depth = sum(max((_depth(node) for _, node in (*step.keys, *step.items)), default=0)
                for step in steps)  # fmt: skip
    want = min(_MOST_FRAMES, 1_000 + _FRAMES_PER_LEVEL * depth)
    if want > sys.getrecursionlimit():
        sys.setrecursionlimit(want)


def _depth(root: Node) -> int:
    """The depth of ``root``'s tree, walked without recursion (a shared node once)."""
    depth: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        kids = children(node)
        if expanded:
            depth[id(node)] = 1 + max((depth[id(k)] for k in kids), default=0)
        elif id(node) not in depth:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in depth)
    return depth[id(root)]


def prepare(steps: tuple[Step, ...], names: Iterable[str]) -> PreparedPlan:
    """The untyped plan of ``steps`` over frames with these column ``names`` (cached).

    Depends only on the steps and the names, so every batch of a stream, every
    partition and every handle with the same steps shares it.
    """
    names = tuple(names)
    key = (steps, names)
    with _LOCK:
        hit = _PREPARED.get(key)
        if hit is not None:
            _PREPARED.move_to_end(key)
            return hit
    _room_to_nest(steps)
    planned = filter_changing_rows(steps, names)  # `select(x.head(3))`: a filter of the frame
    specs = plan_segments(planned, names)
    prepared = PreparedPlan(planned, names, specs, _typed_inputs(specs, names))
    with _LOCK:
        _PREPARED[key] = prepared
        while len(_PREPARED) > _CACHE_MAX:
            _PREPARED.popitem(last=False)
    return prepared


def _carry(
    segment: Segment, adapter: FrameAdapter, columns: Columns, target: str
) -> dict[str, pa.Array] | None:
    """The columns a filtering segment's backend keeps the rows of, or None to filter later.

    Only the CPU backend filters in its kernels, and only where the result is built from
    Arrow columns (pyarrow and polars frames, intermediate tables): pandas results keep
    their own column types, so pandas filters them. A frame with a column Arrow cannot
    hold (polars' 128-bit integers) is filtered by the frame too.
    """
    if segment.mask is None or segment.one_row or target != "cpu" \
            or adapter.kind.startswith("pandas"):  # fmt: skip
        return None
    carried = {}
    for source in dict.fromkeys(segment.passthrough.values()):
        try:
            carried[source] = columns.get(source)
        except UnsupportedTypeError:
            return None
    return carried


def host_reason(segment: Segment) -> str:
    """Why ``segment`` runs on the host CPU whatever the device ('' if it does not)."""
    if not segment.host_functions:
        return ""
    names = ", ".join(f"`{n}`" for n in segment.host_functions)
    return (
        f"calls compiled user function(s) {names}, which CUDA C cannot call: the segment's "
        "passes run on the host CPU on every device"
    )


def _backend_for(segment: Segment, backend: Any, target: str, stats: RunStats) -> Any:
    """The backend that runs ``segment``: the CPU for one calling compiled user functions."""
    reason = host_reason(segment)
    if not reason or target == "cpu":
        return backend
    stats.kernels.append(f"segment on the host CPU: {reason}")
    return get_backend("cpu")


def _run_segment(
    backend: Any,
    segment: Segment,
    arrays: dict[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str],
    *,
    carry: dict[str, pa.Array] | None = None,
    groups: Grouping | None = None,
) -> SegmentResult:
    """One segment on ``backend``; a backend that does not filter itself gives (columns, mask)."""
    extra: dict[str, Any] = {}
    if carry is not None:
        extra["carry"] = carry
    if groups is not None:
        extra["groups"] = groups
    with enum_failures_named(segment, arrays):
        ran = backend.run_segment(segment, arrays, num_rows, stats, nan_null, **extra)
    return ran if isinstance(ran, SegmentResult) else SegmentResult(*ran)


class _WithFrame(Mapping[str, pa.Array]):
    """A segment's kernel inputs, and the frame's other columns as kernels read them.

    Dictionaries and lookup tables are built from string columns by name. Strings a
    scan moved (``s.shift(1)``) are a dictionary array of their own: the scan's
    result, an input of its segment, or in ``moved`` (those of the segment's ``pre``,
    whose dictionaries a result of the segment may still name).
    """

    def __init__(self, arrays: Mapping[str, pa.Array], columns: Columns,
                 moved: Mapping[str, pa.Array] | None = None) -> None:  # fmt: skip
        self.arrays = arrays
        self.columns = columns
        self.moved = moved or {}

    def __getitem__(self, name: str) -> pa.Array:
        array = self.arrays.get(name)
        if array is None:
            array = self.moved.get(name)
        return array if array is not None else self.columns.kernel_array(name)

    def __iter__(self) -> Any:
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)


def _finished(
    segment: Segment, results: Mapping[str, pa.Array], builder: TableBuilder
) -> dict[str, pa.Array]:
    """Kernel results as columns of their logical types (dates, strings from their codes).

    ``builder`` is the one that made the segment's tables (`_frame_inputs`).
    """
    out = dict(results)
    for name, logical in segment.output_logical.items():
        if name in out:
            out[name] = finish_output(out[name], logical, segment.output_dicts.get(name),
                                      builder)  # fmt: skip
    return out


def _identity(array: pa.Array) -> tuple[Any, ...]:
    """What identifies an input column's data while its buffers live: type, place, extent."""
    buffers = tuple(b.address if b is not None else 0 for b in array.buffers())
    return (array.type, len(array), array.offset, buffers)


def grouping(
    segment: Segment,
    columns: Columns,
    num_rows: int,
    backend: Any,
    report: ComputeReport,
    cache: dict[Any, Any] | None = None,
    streams: ScanStreams | None = None,
    target: str = "cpu",
    *,
    in_place: bool = True,
) -> Grouping | None:
    """The passes before a segment's kernels: group ids, host reductions and scans.

    That is the factorize pass (group ids of its key sets), the reductions taken from
    the groups themselves, and the results of its ordered operations (the scan pass).
    Key columns are read in place; key expressions (and the inputs of ``first``,
    ``last``, ``n_unique``, and of scans) are computed by the segment's ``pre``
    segment. Ids of input columns are kept in ``cache`` (the lazy handle's) while the
    columns' buffers are the same. With ``streams``, the frame is one batch of a
    stream, and each scan goes on from where the batch before it stopped. Shifts the
    kernels can read in place (`Segment.lagged`) are not scanned unless ``in_place`` is
    false (a pass leaving its reductions as partials binds no lagged input) or it is a
    stream's batch.
    """
    if not segment.key_sets and not segment.host_aggs and not segment.scans:
        return None
    computed: dict[str, pa.Array] = {}
    raw: dict[str, pa.Array] = {}  # as kernels made them (a string as its codes)
    moved: dict[str, pa.Array] = {}  # results of the scans of `pre` that moved strings
    # where the dictionaries of scan arguments are built: the pre segment's builder
    builder = TableBuilder(_WithFrame({}, columns))
    if segment.pre is not None:
        pre = segment.pre
        pre_groups = grouping(pre, columns, num_rows, backend, report, cache, streams, target)
        inputs, builder = _frame_inputs(pre, columns, pre_groups)
        if pre_groups is not None:
            moved = dict(pre_groups.moved)
        ran = _run_segment(
            _backend_for(pre, backend, target, report.stats), pre, inputs, num_rows,
            report.stats, _nan_null(pre, columns, pre_groups), groups=pre_groups,
        )  # fmt: skip
        raw = dict(ran.columns)
        computed = _finished(pre, raw, builder)

    # shifts the kernels read in place; a stream's batches scan them (their carry)
    lagged = dict(segment.lagged) if streams is None and in_place else {}

    whole = _Whole(segment, columns, lagged, computed, raw)
    ids: dict[str, GroupIds] = {}
    for keys in segment.key_sets:
        name = keys.ids_column
        assert name is not None
        arrays = [whole(k) for k in keys.exprs]
        cache_key = None
        if cache is not None and all(isinstance(k, Column) and columns.adapter.immutable(k.name)
                                     for k in keys.exprs):  # fmt: skip
            cache_key = ("group ids", keys, tuple(_identity(a) for a in arrays))
        hit = cache.get(cache_key) if cache is not None and cache_key is not None else None
        if hit is not None:
            groups = hit[1]
        else:
            groups = factorize(arrays, num_rows)
            if cache is not None and cache_key is not None:
                # the arrays are kept with the ids: their buffers cannot be reused meanwhile
                cache[cache_key] = (arrays, groups)
        ids[name] = groups
        report.stats.kernels.append(
            f"group ids [{keys!r}]: {groups.count} group(s) by {groups.method}"
            + (" (cached)" if hit is not None else "")
        )
    out = Grouping(ids, one_group(num_rows), computed=computed, moved=moved)
    out.lagged = lagged
    whole.scanned = out.scanned
    orders: dict[KeySet, _RowOrder] = {}  # `over(order_by=...)`: each order sorted once
    for name, scan in segment.scans.items():
        if name in out.lagged:
            # read in place by the passes; as an output of its own, the column's rows moved
            # without a copy (`whole` makes it where a key or a host reduction reads it)
            if name in segment.passthrough.values():
                out.scanned[name] = shifted_in_place(whole(scan.arg), scan.options,
                                                     segment.types[scan])  # fmt: skip
            continue
        # the argument as a column with its nulls (pandas NaN as null), in frame order
        groups = out.of(scan.keys.ids_column)
        arg, types = whole(scan.arg), (segment.types[scan.arg], segment.types[scan])
        keyed = groups if scan.keys.exprs else None
        where = f" over {groups.count} group(s)" if scan.keys.exprs else ""
        # `over(order_by=...)`: the scan runs over the rows taken in that order (the
        # order_by of `sort_by` is its own `by`, with flags per key: it sorts by itself)
        order = None if scan.func == "sort_by" else _RowOrder.of(scan.keys, whole, orders)
        if order is not None:
            keyed = None if keyed is None else order.regrouped(keyed)
            where += f", rows in the order of {', '.join(map(repr, scan.keys.order_by))}"
        if scan.func in BY_ORDER_FUNCS and order is not None:
            # a time-based window or ewm: the values and `by` (its `order_by`) in `by` order
            by_order = rolling_by if scan.func in ROLLING_BY_FUNCS else ewm_mean_by
            scanned = by_order(scan.func, scan.options, order.taken(arg),
                               order.taken(whole(scan.keys.order_by[0])), keyed, types[1])
            out.scanned[name] = order.restored(scanned)
            report.stats.kernels.append(f"scan [{scan!r}]{where}: on the host, from its "
                                        "whole column")  # fmt: skip
            continue
        if scan.func in HOST_SCANS:  # of the values themselves (strings as text), every row read
            if scan.func == "sort_by":  # its `by`, with a flag per key
                scanned = permuted(scan.func, arg, scan.options, keyed,
                                   [whole(k) for k in scan.keys.order_by])  # fmt: skip
            else:
                scanned = host_scan(scan.func, scan.options, order.taken(arg) if order else arg,
                                    keyed, builder.dictionary)  # fmt: skip
            out.scanned[name] = order.restored(scanned) if order else scanned
            if pa.types.is_dictionary(scanned.type):  # strings it wrote: its own dictionary
                out.moved[name] = scanned
            report.stats.kernels.append(f"scan [{scan!r}]{where}: on the host, from its "
                                        "whole column")  # fmt: skip
            continue
        # a scan that moves strings: its result is their codes with a dictionary of its
        # own, made from the argument's (`ScanStreams` puts carried strings first)
        spec = segment.scan_dicts.get(name)
        dictionary = None if spec is None else builder.dictionary(spec)
        if not (pa.types.is_integer(arg.type) or pa.types.is_floating(arg.type)
                or pa.types.is_boolean(arg.type) or pa.types.is_temporal(arg.type)):
            arg = whole(scan.arg, as_made=True)  # strings and categories: their codes
        if rolling_weights(scan.func, scan.options) is not None:  # what polars refuses of them
            kept = _kept_by(segment, name, scan)
            check_weighted(scan, arg, types[1], None if kept is None else whole(kept))
        # strings compared (cum_min, cum_max) run on their ranks; a stream ranks each
        # batch's strings with those its carry holds (`ScanStreams`)
        ranks = None
        if dictionary is not None and scan.func in STRING_COMPARISONS and streams is None:
            ranks = StringRanks.of(dictionary)
            arg = ranks.ranks_of(arg)
        # the CUDA backend runs the scans it has kernels for on the device (`run_scan`)
        on_device = getattr(backend, "run_scan", None)
        why = device_scan_reason(scan.func, streams is not None) if on_device is not None \
            else None  # fmt: skip
        if on_device is not None and why is None and order is None:
            scanned, done = on_device(scan.func, scan.options, arg, *types, report.stats, keyed)
            report.stats.kernels.append(f"scan [{scan!r}]{where}: {done}")
        elif order is not None:  # a stream's batches cannot be put in order (planning refuses)
            assert streams is None
            why = why or ("rows put in order on the host" if on_device is not None else None)
            scanned = order.restored(run_scan(scan.func, scan.options, order.taken(arg), *types,
                                              keyed))  # fmt: skip
        elif streams is None:
            scanned = run_scan(scan.func, scan.options, arg, *types, keyed)
        else:
            key_arrays = [whole(k) for k in scan.keys.exprs]
            # moved strings come back with the carried ones before the batch's dictionary
            scanned = streams.run((id(segment), name), scan.func, scan.options, arg, *types,
                                  keyed, key_arrays, dictionary)  # fmt: skip
        if on_device is None or why is not None:
            report.stats.kernels.append(f"scan [{scan!r}]{where}: on the host CPU"
                                        + (f" ({why})" if why else ""))
        if ranks is not None:
            scanned = ranks.codes_of(scanned)
        if dictionary is not None:
            if not pa.types.is_dictionary(scanned.type):  # in memory: the argument's
                scanned = with_dictionary(scanned, dictionary)
            out.moved[name] = scanned
        out.scanned[name] = scanned
    for agg in segment.host_aggs:
        arg, pred = agg.arg, None
        if isinstance(arg, Filtered):
            pred = whole(arg.predicate)
            arg = arg.arg
        # a reduction of a computed string or date is typed as the codes or integers it
        # is made of: it reads them as the kernel made them; but distinct values are
        # counted by value (a string map gives equal strings different codes)
        as_made = agg not in segment.opaque and agg.func not in _BY_VALUE
        values = None if arg == ROWS or agg.func == "len" else whole(arg, as_made=as_made)
        groups = out.of(agg.keys.ids_column)
        order = _RowOrder.of(agg.keys, whole, orders)  # `first`/`last`: in the order
        if order is not None:
            groups = order.regrouped(groups)
            values = None if values is None else order.taken(values)
            pred = None if pred is None else order.taken(pred)
        out.host[agg] = host_reduction(agg.func, groups, values, pred, agg.options,
                                       ordered=order is not None)
    return out


#: host reductions that read their argument's values, not the codes a kernel made them as
_BY_VALUE = frozenset({"n_unique", "arg_min", "arg_max", "str_join"})


@dataclass(frozen=True)
class _RowOrder:
    """The rows in the order of a key set's ``order_by`` (``over(order_by=...)``).

    A scan or a ``first``/``last`` takes its argument in that order (`taken`), runs
    as over frame order, and puts its row results back where their rows are
    (`restored`); group ids keep their numbers (`GroupIds.reordered`). ``rows`` is
    None where the frame already stands in that order: nothing is taken or put back.
    """

    rows: np.ndarray[Any, Any] | None

    @classmethod
    def of(cls, keys: KeySet, whole: _Whole,
           made: dict[KeySet, _RowOrder]) -> _RowOrder | None:  # fmt: skip
        """The rows in ``keys``' order (None: none asked); sorted once per order (``made``)."""
        if not keys.order_by:
            return None
        key = KeySet((), keys.order_by, keys.descending, keys.nulls_last)
        if key not in made:
            arrays = [whole(k) for k in keys.order_by]
            made[key] = cls(rows_in_order(arrays, keys.descending, keys.nulls_last))
        return made[key]

    def taken(self, array: pa.Array | pa.ChunkedArray) -> pa.Array:
        return one_array(array) if self.rows is None else take(one_array(array), self.rows)

    def regrouped(self, groups: GroupIds) -> GroupIds:
        """``groups`` over the rows in this order."""
        return groups if self.rows is None else groups.reordered(self.rows)

    @cached_property
    def _back(self) -> np.ndarray[Any, Any]:
        """Each row's place in the order: the inverse of ``rows``."""
        assert self.rows is not None
        back = np.empty_like(self.rows)
        back[self.rows] = np.arange(len(self.rows), dtype=self.rows.dtype)
        return back

    def restored(self, array: pa.Array | pa.ChunkedArray) -> pa.Array:
        return one_array(array) if self.rows is None else take(one_array(array), self._back)


class _Whole:
    """A column ``grouping`` reads whole, by node: an input, a scan's result or one of ``pre``.

    An object rather than a closure: a closure that calls itself holds itself, a
    reference cycle through every array it can reach (the scans' results, which the
    output frame shares). Left to the cyclic collector, each compute's arrays outlived
    it: memory grew by a result per call, and the next call's pages came fresh from the
    system (a 1e7-row ``cum_sum`` took 240 ms instead of 20 once a few were held).
    """

    def __init__(self, segment: Segment, columns: Columns, lagged: dict[str, Any],
                 computed: dict[str, pa.Array], raw: dict[str, pa.Array]) -> None:  # fmt: skip
        self.segment, self.columns, self.lagged = segment, columns, lagged
        self.computed, self.raw = computed, raw
        #: the scans' results, as they are made (`Grouping.scanned`)
        self.scanned: dict[str, pa.Array] = {}

    def __call__(self, node: Node, *, as_made: bool = False) -> pa.Array:
        segment, columns = self.segment, self.columns
        if isinstance(node, Column) and node.name in self.lagged:
            # a shift the passes read in place, wanted whole: made here (one copy)
            scan = segment.scans[node.name]
            return shifted_in_place(self(scan.arg), scan.options,
                                    segment.types[scan]).combine_chunks()  # fmt: skip
        if isinstance(node, Column) and node.name in segment.scans:
            # a scan's result (made before host reductions); moved strings: their codes
            array = self.scanned[node.name]
            return array.indices if as_made and pa.types.is_dictionary(array.type) else array
        if isinstance(node, Column) and as_made:
            array = columns.kernel_array(node.name)  # a string column as its codes
            if pa.types.is_dictionary(array.type):
                return array.indices
        if isinstance(node, Column):  # pandas' NaN as null, as the kernels read it
            return columns.get_as_arrow_nulls(node.name)
        return (self.raw if as_made else self.computed)[segment.host_names[node]]


def _kept_by(segment: Segment, name: str, scan: Scan) -> Node | None:
    """The predicate ``p`` of ``x.filter(p).<scan>`` in a reduction (None: not filtered).

    Typing scans the kept rows of a filter as a group of the key ``p``
    (`colbridge.plan.typecheck`); only those rows are the scan's own.
    """
    if not scan.keys.exprs:
        return None
    predicate, column = scan.keys.exprs[-1], Column(name)
    for level in segment.agg_levels:
        for reduction in level:
            for node in deep_walk(reduction):
                if isinstance(node, Filtered) and node.predicate == predicate \
                        and any(m == column for m in deep_walk(node.arg)):  # fmt: skip
                    return predicate
    return None


def nan_null_inputs(segment: Segment, columns: Columns,
                    lagged: Mapping[str, LaggedRead]) -> frozenset[str]:  # fmt: skip
    """The inputs in which NaN means null: frame columns, and shifts read in place of them."""
    found = columns.nan_null(segment.frame_inputs)
    if lagged:
        sources = columns.nan_null([read.source for read in lagged.values()])
        found |= {name for name, read in lagged.items() if read.source in sources}
    return frozenset(found)


def _nan_null(segment: Segment, columns: Columns, groups: Grouping | None) -> frozenset[str]:
    return nan_null_inputs(segment, columns, groups.lagged if groups is not None else {})


def _frame_inputs(segment: Segment, columns: Columns,
                  groups: Grouping | None) -> tuple[dict[str, pa.Array], TableBuilder]:  # fmt: skip
    """The segment's inputs: frame columns, results of its scans, and its lookup tables.

    The scans' results are in ``groups`` (`grouping` makes them first: a table may
    read the strings a scan moved). With them, the builder that made the tables: the
    segment's outputs take their dictionaries from it (`_finished`), each made once.
    """
    arrays = {name: columns.kernel_array(name) for name in segment.frame_inputs}
    moved: Mapping[str, pa.Array] = {}
    if groups is not None:
        arrays.update(groups.scanned)
        # a shift read in place: the kernels bind the column itself (they read it lagged)
        arrays.update({name: columns.kernel_array(read.source)
                       for name, read in groups.lagged.items()})  # fmt: skip
        moved = groups.moved
    builder = TableBuilder(_WithFrame(arrays, columns, moved))
    arrays.update(segment_tables(segment, builder))
    return arrays, builder


def _group_keys(segment: Segment, columns: Columns, groups: Grouping) -> dict[str, pa.Array]:
    """The key columns of a ``group_by`` segment's result: each group's first key values."""
    spec = segment.group_by
    assert spec is not None
    first = groups.of(spec.keys.ids_column).first_rows
    out: dict[str, pa.Array] = {}
    for name, key in zip(spec.names, spec.keys.exprs, strict=True):
        if name not in segment.order:
            continue
        if isinstance(key, Column):
            out[name] = take(columns.get_as_arrow_nulls(key.name), first)
        else:  # computed by the pre segment: factorized from it, taken from it again
            out[name] = take(groups.computed[segment.host_names[key]], first)
    return out


def _kept_rows(
    rows: np.ndarray[Any, Any] | None, mask: pa.BooleanArray, num_rows: int
) -> np.ndarray[Any, Any]:
    """The input's rows still held after ``mask`` (over the ``num_rows`` held before)."""
    keep = np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    held = np.arange(num_rows, dtype=np.int64) if rows is None else rows
    out: np.ndarray[Any, Any] = held[np.broadcast_to(keep, (num_rows,))]
    return out


def _rows_table(columns: Mapping[str, pa.Array | pa.ChunkedArray], num_rows: int) -> pa.Table:
    """A table of ``columns``; without columns, still ``num_rows`` rows (for `cb.len()`)."""
    if columns:
        return pa.table(columns)
    return pa.table({"rows": pa.nulls(num_rows)}).drop_columns(["rows"])


def execute(
    plan: PreparedPlan,
    adapter: FrameAdapter,
    report: ComputeReport,
    target: str,
    cache: dict[Any, Any] | None = None,
    streams: ScanStreams | None = None,
) -> Any:
    """Run ``plan`` over the frame behind ``adapter`` on ``target``; a frame of its kind.

    Input columns are read in place; results are fresh Arrow arrays; a filter is
    applied to the result once, at the end of its segment. ``cache`` (the lazy
    handle's) keeps the group ids of the input frame's key columns; ``streams``
    carries ordered operations over from the batch before (see `grouping`).
    """
    columns = Columns(adapter, report.copies)
    segments = plan.typed(columns).segments
    if target == "cpu" and len(segments) == 1:
        done = _run_recurring(segments[0], adapter, columns, report)
        if done is not None:
            return done
    return _run(segments, adapter, columns, report, target, partials=False, cache=cache,
                streams=streams)  # fmt: skip


def _run_recurring(segment: Segment, adapter: FrameAdapter, columns: Columns,
                   report: ComputeReport) -> Any | None:  # fmt: skip
    """`_run` of a one-segment plan of plain passes on the CPU, by the passes chosen before.

    What `_run` does for such a plan (`Segment.plain_passes`), less what it has nothing
    to do for (groups, scans, tables, a filter, renamed columns); None where the CPU
    backend has no passes chosen for these columns yet
    (`colbridge.backends.cpu.run_recurring`).
    """
    if not segment.plain_passes or segment.output_dicts \
            or any(n != s for n, s in segment.passthrough.items()):  # fmt: skip
        return None
    arrays = {name: columns.kernel_array(name) for name in segment.inputs}
    ran = cpu.run_recurring(segment, arrays, adapter.num_rows, report.stats,
                            columns.nan_null(segment.inputs))  # fmt: skip
    if ran is None:
        return None
    return adapter.build(segment.order, _finished(segment, ran.columns, TableBuilder(arrays)),
                         one_row=segment.one_row)  # fmt: skip


def _run(
    segments: list[Segment],
    adapter: FrameAdapter,
    columns: Columns,
    report: ComputeReport,
    target: str,
    *,
    partials: bool,
    cache: dict[Any, Any] | None = None,
    streams: ScanStreams | None = None,
) -> Any:
    """The segment loop of `execute`.

    With ``partials``, the last segment's reductions are left as their folded partial
    rows (see `reduction_partials`).
    """
    device_backend = get_backend(target)
    original = adapter
    last = len(segments) - 1
    # the input's rows the current table holds (None: all, in order; untraced after a
    # grouping or a one-row segment), and its columns that are still the input's own
    rows: np.ndarray[Any, Any] | None = None
    traced = True
    kept = frozenset(original.names)
    for index, segment in enumerate(segments):
        groups = grouping(segment, columns, adapter.num_rows, device_backend, report,
                          cache if adapter is original else None, streams, target,
                          in_place=not (partials and index == last))  # fmt: skip
        arrays, builder = _frame_inputs(segment, columns, groups)  # reductions read scans' too
        nan_null = _nan_null(segment, columns, groups)
        backend = _backend_for(segment, device_backend, target, report.stats)
        on = "cpu" if backend is not device_backend else target
        if partials and index == last:
            with enum_failures_named(segment, arrays):
                return backend.reduce_partials(segment, arrays, adapter.num_rows, report.stats,
                                               nan_null), adapter.num_rows  # fmt: skip
        result = _run_segment(backend, segment, arrays, adapter.num_rows, report.stats,
                              nan_null, carry=_carry(segment, adapter, columns, on),
                              groups=groups)  # fmt: skip
        mask = result.mask
        new: dict[str, pa.Array | pa.ChunkedArray] = dict(_finished(
            segment, result.columns, builder))  # fmt: skip
        if segment.group_by is not None:
            # the groups are the rows from here on: a table of their keys and results
            assert groups is not None
            new.update(_group_keys(segment, columns, groups))
            # one row per group, even where no later step reads a column of them
            count = len(groups.of(segment.group_by.keys.ids_column).first_rows)
            table = _rows_table({n: new[n] for n in segment.order}, count)
            if index == last:
                return original.from_arrow(table)
            adapter = ArrowTableAdapter(table)
            columns = Columns(adapter, report.copies)
            traced = False  # the rows are the groups from here on
            continue
        final = index == last and adapter is original
        kept = frozenset(n for n in segment.order if n in kept and n not in segment.scans
                         and segment.passthrough.get(n) == n)  # fmt: skip
        traced = traced and not segment.one_row and original.rebuilds_rows
        if mask is not None and traced:
            rows = _kept_rows(rows, mask, adapter.num_rows)
        # the rows of the table made below (a segment may make no column a later one reads)
        count = 1 if segment.one_row else adapter.num_rows
        if result.compacted:
            # the backend filtered the outputs and the columns it carried; the frame filters
            # the columns it could not carry (strings, ...), by the backend's mask
            others = [s for s in dict.fromkeys(segment.passthrough.values())
                      if s not in result.columns]  # fmt: skip
            rest = None
            if others:
                rest = adapt_frame(adapter.filter(adapter.build(others, {}), mask))
            for name, source in segment.passthrough.items():
                new[name] = result.columns[source] if source in result.columns \
                    else rest.column(source)  # type: ignore[union-attr]  # fmt: skip
            count = result.kept
            mask = None
        else:
            for name, source in segment.passthrough.items():
                if source in segment.scans:
                    assert groups is not None
                    new[name] = groups.scanned[source]  # a scan's result, as the scan made it
                elif name != source or not final:
                    # the frame's own untouched columns are kept by the adapter as they are
                    new[name] = columns.get_as_arrow_nulls(source)
        if final:
            out = adapter.build(segment.order, new, one_row=segment.one_row)
            return adapter.filter(out, mask) if mask is not None else out
        table = ArrowTableAdapter(_rows_table({n: new[n] for n in segment.order}, count))
        if mask is not None:
            table = ArrowTableAdapter(table.filter(table.frame, mask))
        if index == last:
            if traced:
                return original.frame_of_rows(table.frame, rows, kept)
            return original.from_arrow(table.frame)
        adapter = table
        columns = Columns(adapter, report.copies)
    msg = "empty plan"  # pragma: no cover - plan_segments always yields a segment
    raise AssertionError(msg)


@dataclass
class Partials:
    """Reductions over part of the data (a batch, a partition), as folded partial rows.

    Partials of disjoint parts `fold` into those of their union; `values` finishes
    them into what the reductions are over all of it, with the very functions a single
    in-memory compute uses (`colbridge.backends.common`), so streamed, partitioned
    and in-memory results agree.
    """

    aggs: list[Agg]
    #: per reduction: its slot in the rows, or None when its value needs no data
    slots: list[AggSlot | None]
    rows: tuple[np.ndarray, np.ndarray, np.ndarray]
    num_rows: int
    #: values of the reductions that need no data (e.g. of a literal)
    fixed: dict[int, Literal]
    #: values over this part of reductions computed on the host, not by a kernel's
    #: partial rows (the count of a string column): folded by `_fold_hosted`
    hosted: dict[int, Literal] = field(default_factory=dict)
    #: the temporal type of hosted values held as their integers (a min/max of dates)
    logical: dict[int, Logical] = field(default_factory=dict)

    def fold(self, other: Partials) -> Partials:
        """The partials of both parts together."""
        known = [s for s in self.slots if s is not None]
        rows = tuple(np.concatenate([a, b]) for a, b in zip(self.rows, other.rows, strict=True))
        hosted = {q: _fold_hosted(self.aggs[q].func, v, other.hosted[q])
                  for q, v in self.hosted.items()}  # fmt: skip
        return Partials(self.aggs, self.slots, fold_partials(known, *rows),
                        self.num_rows + other.num_rows, self.fixed, hosted,
                        self.logical)  # fmt: skip

    def values(self) -> dict[Agg, Node]:
        """Each reduction's value over all the parts folded in, as a typed literal.

        A temporal value is its integer cast to its type (`lit(ticks).cast(...)`): a
        Python datetime would lose nanoseconds, and a literal's unit is polars' default.
        """
        out: dict[Agg, Node] = {}
        for q, (agg, slot) in enumerate(zip(self.aggs, self.slots, strict=True)):
            if slot is None:
                value: Node = self.hosted[q] if q in self.hosted else self.fixed[q]
                if q in self.logical:
                    value = Function("cast", (value,), (self.logical[q], True))
                out[agg] = value
                continue
            value, valid = finalize_reduction(slot, *self.rows, self.num_rows)
            dtype = slot.result_dtype
            out[agg] = Literal(_python(value) if valid else None, dtype)
        return out


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


#: whole-column reductions computed on the host whose values over parts fold into the
#: value over their union (`FOLDED_HOST_AGGS`): counts (of a string column, say), a
#: product, the min/max of temporal values (folded as their integers: `Partials.logical`).
_HOSTED_FOLDS: dict[str, Callable[[Any, Any], Any]] = {
    "count": lambda a, b: a + b,
    "null_count": lambda a, b: a + b,
    "len": lambda a, b: a + b,
    "product": lambda a, b: a * b,  # integers wrapped to their type (`_fold_hosted`)
    "min": min,
    "max": max,
    "bitwise_and": lambda a, b: a & b,  # Python integers: exact; booleans stay booleans
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
}
assert set(_HOSTED_FOLDS) == FOLDED_HOST_AGGS


def _reads_columns(node: Node) -> bool:
    return any(isinstance(n, Column) for n in deep_walk(node))


def _constant(node: Node) -> bool:
    """Whether a typed expression is one value whatever the rows: no column, reduction or scan."""
    return not any(isinstance(n, (Column, Agg, GroupAgg, Scan)) for n in deep_walk(node))


def _fold_hosted(func: str, a: Literal, b: Literal) -> Literal:
    if a.value is None:
        return b
    if b.value is None:
        return a
    value = _HOSTED_FOLDS[func](a.value, b.value)
    if func == "product" and a.dtype is not None and a.dtype.is_integer:
        # Python's integers do not overflow; the pieces' Int64/UInt64 products wrap
        value %= 2**64
        if not a.dtype.is_unsigned and value >= 2**63:
            value -= 2**64
    return Literal(value, a.dtype)


def reduction_partials(
    prefix: tuple[Step, ...],
    aggs: list[Agg],
    adapter: FrameAdapter,
    report: ComputeReport,
    target: str,
    streams: ScanStreams | None = None,
) -> Partials:
    """`Partials` of ``aggs`` over the frame that ``prefix`` makes of ``adapter``'s frame.

    ``aggs`` hold no reduction inside them (`colbridge.plan.streaming` finds them);
    ``streams`` carries ordered operations over from the piece before.
    """
    items = tuple((f"r{q}", agg) for q, agg in enumerate(aggs))
    plan = prepare((*prefix, Step("select", items)), adapter.names)
    columns = Columns(adapter, report.copies)
    segments = plan.typed(columns).segments
    outputs = dict(segments[-1].outputs)
    fixed: dict[int, Literal] = {}
    hosted: dict[int, Literal] = {}
    logical: dict[int, Logical] = {}
    for q in range(len(aggs)):
        if segments[-1].output_logical.get(f"r{q}") == NULL:
            fixed[q] = Literal(None)  # polars' Null type (`col("n").max()`): null, untyped
    off_kernel = [q for q in range(len(aggs))
                  if not isinstance(outputs[f"r{q}"], Agg) and q not in fixed]  # fmt: skip
    # counts depend on the piece's rows even where they read no column (`cb.len()`); a
    # reduction of one value (`lit(1).count()`, typed to a constant) is the same in each
    free = [q for q in off_kernel if _constant(outputs[f"r{q}"]) or (
        not _reads_columns(outputs[f"r{q}"]) and aggs[q].func not in _HOSTED_FOLDS)]
    on_host = [q for q in off_kernel if q not in free]  # fmt: skip
    for q in on_host:
        if aggs[q].func not in _HOSTED_FOLDS:
            msg = (
                f"`{aggs[q]!r}` is computed from a whole column at once and cannot be "
                "folded from the pieces of a stream or partitions; compute it in memory"
            )
            raise UnsupportedOperationError(msg)
    if on_host and streams is not None and any(
        isinstance(n, Scan) for step in prefix for _, e in step.items for n in deep_walk(e)
    ):
        msg = (
            f"`{aggs[on_host[0]]!r}` after an ordered operation cannot be folded from the "
            "batches of a stream; compute it in memory"
        )
        raise UnsupportedOperationError(msg)
    if on_host:
        # reductions the host computes (the count of a string column): their value over
        # this piece, folded with the other pieces' by `_fold_hosted`
        steps = (*prefix, Step("select", tuple((f"r{q}", aggs[q]) for q in on_host)))
        made = execute(prepare(steps, adapter.names), adapter, report, target)
        row = made if isinstance(made, pa.Table) else pa.table(made)  # a pandas/polars piece
        for q in on_host:
            column = row.column(f"r{q}").combine_chunks()
            if aggs[q].func in ("min", "max"):
                temporal = logical_from_arrow(column.type)
                if temporal is None or not temporal.is_temporal:  # strings: not folded
                    msg = (f"`{aggs[q]!r}` of a column of type {column.type} cannot be "
                           "folded from the pieces of a stream or partitions; compute it "
                           "in memory")  # fmt: skip
                    raise UnsupportedOperationError(msg)
                logical[q] = temporal  # folded as integers, cast back by `Partials.values`
                column = integer_values(column).cast(pa.int64())
            hosted[q] = Literal(column[0].as_py(), dtype_from_arrow(column.type))
    if free:
        # a reduction of a literal was typed into a value that reads no column: compute it
        # once, over a frame without columns
        steps = (Step("select", tuple((f"r{q}", aggs[q]) for q in free)),)
        row = execute(prepare(steps, ()), ArrowTableAdapter(pa.table({})), report, target)
        for q in free:
            column = row.column(f"r{q}")
            fixed[q] = Literal(column[0].as_py(), dtype_from_arrow(column.type))
    if not segments[-1].agg_levels:
        empty = (np.zeros((1, 1)), np.zeros((1, 1), np.int64), np.zeros((1, 1), np.uint64))
        return Partials(list(aggs), [None] * len(aggs), empty, adapter.num_rows, fixed, hosted,
                        logical)  # fmt: skip
    (slots, *rows), num_rows = _run(segments, adapter, columns, report, target, partials=True,
                                    streams=streams)  # fmt: skip
    by_agg = {slot.agg: slot for slot in slots}
    placed = [by_agg.get(outputs[f"r{q}"]) for q in range(len(aggs))]  # type: ignore[call-overload]
    return Partials(list(aggs), placed, tuple(rows), num_rows, fixed,  # type: ignore[arg-type]
                    hosted, logical)  # fmt: skip


T = TypeVar("T")


def on_device(
    work: Callable[[str, ComputeReport], T], device: str = "auto", fallback: str = "cpu"
) -> tuple[T, ComputeReport]:
    """Run ``work(target, report)`` on the device asked for, under the ``fallback`` policy.

    ``device`` and ``fallback`` mean what they mean for `LazyFrame.compute`: when the GPU
    fails while running (out of memory, driver, compile) and ``fallback="cpu"``, the work
    runs again on the CPU from its untouched inputs, with a `DeviceFallbackWarning` and
    the reason in the report.
    """
    report = ComputeReport(device=resolve_device(device, fallback))
    choice = report.device
    assert choice is not None
    if choice.target == "cpu":
        return work("cpu", report), report  # nothing to bind, nothing to fall back from
    try:
        with device_context(choice):
            return work(choice.target, report), report
    except (DeviceError, KernelCompileError) as exc:
        if choice.target == "cpu" or fallback != "cpu":
            raise
        note = f"fell back to cpu: {choice.target} failed while running ({exc})"
        warnings.warn(note, DeviceFallbackWarning, stacklevel=3)
        report = ComputeReport(device=DeviceChoice("cpu", choice.requested, note))
        return work("cpu", report), report
