"""Runtime: a plan prepared once, typed per input schema, run segment by segment on a backend.

Stage: runtime. `prepare` turns queued steps into untyped segments (cached by
steps and column names); `PreparedPlan.typed` types them against the columns
of one frame (cached by the input types); `execute` fetches the columns a
segment reads, runs it on the chosen backend and builds the result frame.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from colbridge.backends import get_backend
from colbridge.backends.common import RunStats
from colbridge.backends.device import DeviceChoice
from colbridge.columns.frames import ArrowTableAdapter, FrameAdapter
from colbridge.expr.nodes import Column, walk
from colbridge.plan.logical import Step
from colbridge.plan.planner import Segment, SegmentSpec, plan_segments, type_segment
from colbridge.plan.typecheck import ColumnType
from colbridge.runtime.tables import finish_output, segment_tables
from colbridge.types import dtype_from_arrow
from colbridge.types.logical import logical_from_arrow

__all__ = ["Columns", "ComputeReport", "PreparedPlan", "TypedPlan", "execute", "prepare"]

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
            if chunked.num_chunks == 1:
                array = chunked.chunk(0)
            elif chunked.num_chunks == 0:
                array = pa.array([], type=chunked.type)
            else:
                self.copies.append(
                    f"column `{name}`: {chunked.num_chunks} chunks combined into one (a copy)"
                )
                array = chunked.combine_chunks()
            note = self.adapter.copy_note(name)
            if note is not None:
                self.copies.append(note)
            self._arrays[name] = array
        return array

    def kernel_array(self, name: str) -> pa.Array:
        """The column as a kernel reads it: a string column as dictionary codes.

        A plain string column is dictionary-encoded once per compute (a copy, reported);
        a dictionary column is read as it is (its codes), unless its dictionary holds
        nulls, which are moved into the codes (a copy, reported).
        """
        array = self.get(name)
        key = "\0codes:" + name
        hit = self._arrays.get(key)
        if hit is not None:
            return hit
        logical = logical_from_arrow(array.type)
        if logical is None or not logical.is_string:
            return array
        if pa.types.is_dictionary(array.type):
            if array.dictionary.null_count == 0:
                return array
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
    encoded = pc.dictionary_encode(array)
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
    #: input columns the first segment's kernels read (their types key the typed plan)
    first_inputs: tuple[str, ...]
    _typed: dict[Any, TypedPlan] = field(default_factory=dict, repr=False)

    def typed(self, columns: Columns) -> TypedPlan:
        """The plan typed for the columns of one frame (cached by their Arrow types)."""
        schema_key = tuple(columns.get(n).type for n in self.first_inputs)
        local = self._typed.get(schema_key)
        if local is not None:
            return local
        key = (self.steps, self.names, schema_key)
        with _LOCK:
            cached = _TYPED.get(key)
            if cached is not None:
                _TYPED.move_to_end(key)
        if cached is None:
            cached = _type_plan(self.specs, self.names, columns)
            with _LOCK:
                _TYPED[key] = cached
                while len(_TYPED) > _CACHE_MAX:
                    _TYPED.popitem(last=False)
        self._typed[schema_key] = cached
        return cached


def _type_plan(specs: list[SegmentSpec], names: tuple[str, ...], columns: Columns) -> TypedPlan:
    schema: Mapping[str, ColumnType] = _LazySchema(list(names), columns)
    segments = []
    for spec in specs:
        segment = type_segment(spec, schema)
        segments.append(segment)
        schema = {n: _next_column_type(n, segment, schema) for n in segment.order}
    return TypedPlan(segments)


def _next_column_type(name: str, segment: Segment, schema: Mapping[str, ColumnType]) -> ColumnType:
    """What the next segment knows of column ``name`` after ``segment`` made it."""
    source = segment.passthrough.get(name)
    if source is not None:  # kept as it was: its Arrow type too (dictionaries, timestamps)
        info = schema[source]
        return ColumnType(name, info.dtype, info.arrow_type)
    logical = segment.output_logical.get(name)
    if logical is not None:
        return ColumnType(name, None, logical.arrow)
    dtype = segment.output_types.get(name)
    return ColumnType(name, dtype, dtype)


def _read_by_kernels(spec: SegmentSpec) -> list[str]:
    roots = list(spec.env.values()) + ([spec.mask] if spec.mask is not None else [])
    names: list[str] = []
    for root in roots:
        if isinstance(root, Column):
            continue  # a passthrough column is not read by a kernel
        for n in walk(root):
            if isinstance(n, Column) and n.name not in names:
                names.append(n.name)
    return names


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
    specs = plan_segments(steps, names)
    first = tuple(n for n in _read_by_kernels(specs[0]) if n in names)
    prepared = PreparedPlan(steps, names, specs, first)
    with _LOCK:
        _PREPARED[key] = prepared
        while len(_PREPARED) > _CACHE_MAX:
            _PREPARED.popitem(last=False)
    return prepared


def execute(
    plan: PreparedPlan, adapter: FrameAdapter, report: ComputeReport, target: str
) -> Any:
    """Run ``plan`` over the frame behind ``adapter`` on ``target``; a frame of its kind.

    Input columns are read in place; results are fresh Arrow arrays; a filter is
    applied to the result once, at the end of its segment.
    """
    backend = get_backend(target)
    original = adapter
    columns = Columns(adapter, report.copies)
    segments = plan.typed(columns).segments
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        arrays = {name: columns.kernel_array(name) for name in segment.inputs}
        arrays.update(segment_tables(segment, arrays))
        nan_null = columns.nan_null(segment.inputs)
        results, mask = backend.run_segment(
            segment, arrays, adapter.num_rows, report.stats, nan_null
        )
        for name, logical in segment.output_logical.items():
            if name in results:
                results[name] = finish_output(results[name], logical,
                                              segment.output_dicts.get(name), arrays)  # fmt: skip
        new: dict[str, pa.Array | pa.ChunkedArray] = dict(results)
        final = index == last and adapter is original
        for name, source in segment.passthrough.items():
            # The frame's own untouched columns are kept by the adapter as they are.
            if name != source or not final:
                new[name] = columns.get_as_arrow_nulls(source)
        if final:
            out = adapter.build(segment.order, new, one_row=segment.one_row)
            return adapter.filter(out, mask) if mask is not None else out
        table = ArrowTableAdapter(pa.table({n: new[n] for n in segment.order}))
        if mask is not None:
            table = ArrowTableAdapter(table.frame.filter(mask))
        if index == last:
            return original.from_arrow(table.frame)
        adapter = table
        columns = Columns(adapter, report.copies)
    msg = "empty plan"  # pragma: no cover - plan_segments always yields a segment
    raise AssertionError(msg)
