"""The lazy handle: what ``df.gpu.with_columns(...)`` returns.

It holds the frame and the queued steps; nothing runs until `LazyFrame.compute`.
Handles are immutable: every method returns a new handle, so a handle can be
kept, branched and computed many times.
"""

from __future__ import annotations

import contextvars
import importlib
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from colbridge.backends import get_backend
from colbridge.backends.common import RunStats
from colbridge.backends.cpu import PARALLEL_MIN_ROWS
from colbridge.backends.device import DeviceChoice, device_context, resolve_device
from colbridge.columns.frames import ArrowTableAdapter, FrameAdapter, adapt_frame
from colbridge.errors import (
    DeviceError,
    DeviceFallbackWarning,
    KernelCompileError,
    SchemaError,
)
from colbridge.expr.api import Expr, as_expr
from colbridge.expr.nodes import Alias, Column, Node, output_name, walk
from colbridge.plan.logical import Step
from colbridge.plan.planner import Segment, SegmentSpec, plan_segments, type_segment
from colbridge.plan.typecheck import ColumnType
from colbridge.types import dtype_from_arrow

__all__ = ["LazyFrame"]


@dataclass
class _Plan:
    segments: list[Segment]


@dataclass
class ComputeReport:
    """What the last `compute` did: device, kernels, cache use and copies."""

    device: DeviceChoice | None = None
    stats: RunStats = field(default_factory=RunStats)
    copies: list[str] = field(default_factory=list)


_PLAN_CACHE: OrderedDict[Any, _Plan] = OrderedDict()
# (steps, column names) -> (untyped segment specs, columns the first segment reads)
_SEGMENTS_CACHE: OrderedDict[Any, tuple[list[SegmentSpec], list[str]]] = OrderedDict()
_PLAN_CACHE_MAX = 512
_PLAN_LOCK = threading.Lock()
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


def _named(exprs: Iterable[Any], named: Mapping[str, Any]) -> tuple[tuple[str, Node], ...]:
    items: list[tuple[str, Node]] = []
    for e in exprs:
        if isinstance(e, (list, tuple)):
            items.extend(_named(e, {}))
            continue
        node = as_expr(e).node
        items.append((output_name(node), node.arg if isinstance(node, Alias) else node))
    for name, e in named.items():
        node = as_expr(e).node
        items.append((name, node.arg if isinstance(node, Alias) else node))
    return tuple(items)


class _Columns:
    """Arrow columns of one frame, fetched once per compute, single-chunk."""

    def __init__(self, adapter: FrameAdapter, copies: list[str]) -> None:
        self.adapter = adapter
        self.copies = copies
        self._arrays: dict[str, pa.Array] = {}

    def get(self, name: str) -> pa.Array:
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
            self._arrays[name] = array
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
        out = {}
        for name in names:
            arrow_type = self.get(name).type
            out[name] = ColumnType(name, dtype_from_arrow(arrow_type), arrow_type)
        return out


def _referenced(spec: SegmentSpec) -> list[str]:
    roots = list(spec.env.values()) + ([spec.mask] if spec.mask is not None else [])
    names: list[str] = []
    for root in roots:
        if isinstance(root, Column):
            continue  # a passthrough column is not read by a kernel
        for n in walk(root):
            if isinstance(n, Column) and n.name not in names:
                names.append(n.name)
    return names


class _LazySchema(dict[str, ColumnType]):
    """Schema of a frame whose column types are fetched only when asked for."""

    def __init__(self, names: list[str], columns: _Columns) -> None:
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

    @property
    def steps(self) -> tuple[Step, ...]:
        """The queued steps, oldest first (immutable)."""
        return self._steps

    @property
    def frame(self) -> Any:
        """The frame the steps apply to."""
        return self._frame

    # -- queueing -------------------------------------------------------------
    def _then(self, step: Step) -> LazyFrame:
        return LazyFrame(self._frame, (*self._steps, step), numpy_output=self._numpy_output)

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
        return self._then(Step("with_columns", _named(exprs, named)))

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
        return self._then(Step("select", _named(exprs, named)))

    def filter(self, *predicates: Any) -> LazyFrame:
        """Keep rows where every predicate is true (null counts as false).

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> t = pa.table({"a": [1, None, 3]})
        >>> cb.lazy(t).filter(cb.col("a") > 1).compute().column("a").to_pylist()
        [3]
        """
        if not predicates:
            msg = "`filter` needs at least one predicate"
            raise SchemaError(msg)
        node = as_expr(predicates[0])
        for p in predicates[1:]:
            node = node & as_expr(p)
        return self._then(Step("filter", (("", node.node),)))

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
    def _plan(self, adapter: FrameAdapter, columns: _Columns) -> _Plan:
        names = tuple(adapter.names)
        # The untyped plan depends only on the steps and the column names: keep it on
        # the handle (handles are immutable), so a recomputed handle plans nothing, and
        # in a shared cache, so a new handle with the same steps plans nothing either.
        memo = self._memo.get(names)
        if memo is None:
            with _PLAN_LOCK:
                memo = _SEGMENTS_CACHE.get((self._steps, names))
            if memo is None:
                specs = plan_segments(self._steps, names)
                memo = (specs, [n for n in _referenced(specs[0]) if n in names])
                with _PLAN_LOCK:
                    _SEGMENTS_CACHE[(self._steps, names)] = memo
                    while len(_SEGMENTS_CACHE) > _PLAN_CACHE_MAX:
                        _SEGMENTS_CACHE.popitem(last=False)
            self._memo[names] = memo
        specs, first = memo
        schema_key = tuple(columns.get(n).type for n in first)
        local = self._memo.get((names, schema_key))
        if local is not None:
            return local  # type: ignore[no-any-return]
        key = (self._steps, names, tuple(first), schema_key)
        with _PLAN_LOCK:
            cached = _PLAN_CACHE.get(key)
            if cached is not None:
                _PLAN_CACHE.move_to_end(key)
                self._memo[(names, schema_key)] = cached
                return cached
        schema: Mapping[str, ColumnType] = _LazySchema(list(names), columns)
        segments = []
        for spec in specs:
            segment = type_segment(spec, schema)
            segments.append(segment)
            schema = {
                n: ColumnType(n, segment.output_types.get(n), segment.output_types.get(n))
                for n in segment.order
            }
        plan = _Plan(segments)
        with _PLAN_LOCK:
            _PLAN_CACHE[key] = plan
            while len(_PLAN_CACHE) > _PLAN_CACHE_MAX:
                _PLAN_CACHE.popitem(last=False)
        self._memo[(names, schema_key)] = plan
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
        report = ComputeReport()
        choice = resolve_device(device, fallback)
        report.device = choice
        np_out = self._numpy_output if numpy_output is None else numpy_output
        adapter = adapt_frame(self._frame, numpy_output=np_out)
        try:
            with device_context(choice):
                result = self._run(adapter, report, choice.target)
        except (DeviceError, KernelCompileError) as exc:
            if choice.target == "cpu" or fallback != "cpu":
                raise
            # The GPU failed while running (out of memory, driver, compile): rerun on
            # the CPU from the untouched inputs, and say so.
            note = f"fell back to cpu: {choice.target} failed while running ({exc})"
            warnings.warn(note, DeviceFallbackWarning, stacklevel=2)
            report = ComputeReport(device=DeviceChoice("cpu", choice.requested, note))
            result = self._run(adapter, report, "cpu")
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
        # the worker sees this thread's context variables (cuda.options(...), use_cupy(...))
        return _executor().submit(
            contextvars.copy_context().run, self.compute, device, fallback=fallback,
            numpy_output=numpy_output,
        )  # fmt: skip

    def _run(self, adapter: FrameAdapter, report: ComputeReport, target: str) -> Any:
        backend = get_backend(target)
        original = adapter
        columns = _Columns(adapter, report.copies)
        plan = self._plan(adapter, columns)
        last = len(plan.segments) - 1
        for index, segment in enumerate(plan.segments):
            arrays = {name: columns.get(name) for name in segment.inputs}
            nan_null = columns.nan_null(segment.inputs)
            results, mask = backend.run_segment(
                segment, arrays, adapter.num_rows, report.stats, nan_null
            )
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
            columns = _Columns(adapter, report.copies)
        msg = "empty plan"  # pragma: no cover - plan_segments always yields a segment
        raise AssertionError(msg)

    # -- reporting ------------------------------------------------------------
    def explain(self, *, source: bool = False, device: str = "auto", target: str = "cpu") -> str:
        """The plan as text: steps, passes and fused kernels, columns read, copies, device.

        ``source=True`` adds the generated kernel source for ``target`` (``"cpu"``: numba
        source; ``"cuda"``: CUDA C, which can be shown without a GPU).

        Examples
        --------
        >>> import pyarrow as pa
        >>> import colbridge as cb
        >>> a = cb.col("a")
        >>> q = cb.lazy(pa.table({"a": [1.0, 2.0]})).with_columns(z=a - a.mean())
        >>> print(q.explain(device="cpu").splitlines()[4])
        segment 1: 2 pass(es) over the rows, 2 fused kernel(s); reads ['a']
        """
        from colbridge.plan.nullability import Nullability

        codegen = importlib.import_module(
            "colbridge.codegen.cuda" if target == "cuda" else "colbridge.codegen.numba_cpu"
        )

        adapter = adapt_frame(self._frame)
        copies: list[str] = []
        columns = _Columns(adapter, copies)
        plan = self._plan(adapter, columns)
        choice = resolve_device(device, "cpu")
        lines = [f"colbridge plan over a {adapter.kind} frame of {adapter.num_rows} rows"]
        lines.append(f"device: {choice.target} ({choice.note})")
        lines.append("steps:")
        lines += [f"  {i + 1}. {s.describe()}" for i, s in enumerate(self._steps)] or ["  (none)"]
        parallel = adapter.num_rows >= PARALLEL_MIN_ROWS
        for k, seg in enumerate(plan.segments):
            npasses = len(seg.agg_levels) + (1 if seg.outputs or seg.mask is not None else 0)
            lines.append(
                f"segment {k + 1}: {npasses} pass(es) over the rows, "
                f"{npasses} fused kernel(s); reads {seg.inputs or 'no columns'}"
            )
            for level, aggs in enumerate(seg.agg_levels):
                lines.append(f"  reduction pass {level + 1}: " + ", ".join(repr(a) for a in aggs))
            if seg.outputs or seg.mask is not None:
                outs = [name for name, _ in seg.outputs]
                extra = " + filter mask" if seg.mask is not None else ""
                lines.append(f"  elementwise pass: computes {outs}{extra}")
                for name, node in seg.outputs:
                    lines.append(f"    {name}: {seg.output_types[name]} = {node!r}")
                if seg.mask is not None:
                    lines.append(f"    filter: {seg.mask!r}")
            kept = [n for n, s in seg.passthrough.items() if n == s]
            if kept:
                lines.append(f"  passed through without a copy: {kept}")
            renamed = {n: s for n, s in seg.passthrough.items() if n != s}
            if renamed:
                lines.append(f"  renamed without a copy: {renamed}")
            if source:
                arrays = {name: columns.get(name) for name in seg.inputs}
                nullable = frozenset(n for n in seg.inputs if arrays[n].null_count > 0)
                nulls = Nullability(seg.types, nullable, columns.nan_null(seg.inputs))
                options: dict[str, Any] = {"plan_text": seg.text}
                if target != "cuda":
                    options["parallel"] = parallel
                for aggs in seg.agg_levels:
                    src = codegen.generate_reduce(aggs, seg.types, nulls, **options)
                    lines += [f"  --- reduction kernel source ({target}) ---", src.source]
                if seg.outputs or seg.mask is not None:
                    # the kernel takes the segment's literals as arguments
                    options.update(plan_text=seg.kernel_text, literals=seg.params)
                    src = codegen.generate_elementwise(
                        seg.outputs, seg.mask, seg.types, nulls, **options
                    )
                    lines += [f"  --- elementwise kernel source ({target}) ---", src.source]
        lines.append("copies: " + ("; ".join(copies) or "none (every input read in place)"))
        report = self.last_report
        if report is not None and report.device is not None:
            st = report.stats
            lines.append(
                f"last compute: {len(st.kernels)} kernel launch(es), {st.cache_hits} cache hit(s), "
                f"{st.compiled} compiled; device {report.device.target} ({report.device.note})"
            )
            if report.copies:
                lines.append("last compute copied: " + "; ".join(report.copies))
        return "\n".join(lines)

    def __repr__(self) -> str:
        steps = ", ".join(s.describe() for s in self._steps) or "no steps"
        return f"<colbridge.LazyFrame over {type(self._frame).__name__}: {steps}>"

    # -- rich display (notebooks) ---------------------------------------------
    def _repr_html_(self) -> str:
        """HTML for notebooks: the information of `explain`, as a table (HTML-escaped)."""
        from html import escape

        title, sections = _explain_sections(self)
        rows = []
        for label, value, details in sections:
            items = "".join(
                f'<li style="margin-left:{depth}em"><code>{escape(text)}</code></li>'
                for depth, text in details
            )
            listing = f'<ul style="margin:0;padding-left:1em">{items}</ul>' if items else ""
            rows.append(
                f'<tr><th style="text-align:left;vertical-align:top">{escape(label)}</th>'
                f'<td style="text-align:left">{escape(value)}{listing}</td></tr>'
            )
        return (
            f'<div class="colbridge-lazyframe"><p><strong>colbridge.LazyFrame</strong>: '
            f"{escape(title)}</p><table>{''.join(rows)}</table></div>"
        )

    def _repr_markdown_(self) -> str:
        """Markdown for notebooks: the information of `explain`, as a nested list."""
        import re

        def text(value: str) -> str:
            return re.sub(r"([\\`*_\[\]<>&#|~])", r"\\\1", value)

        def code(value: str) -> str:
            fence = "``" if "`" in value else "`"
            return f"{fence} {value} {fence}" if fence == "``" else f"`{value}`"

        title, sections = _explain_sections(self)
        lines = [f"**colbridge.LazyFrame**: {text(title)}", ""]
        for label, value, details in sections:
            lines.append(f"- **{text(label)}**" + (f": {text(value)}" if value else ""))
            lines += [f"{'  ' * (depth + 1)}- {code(item)}" for depth, item in details]
        return "\n".join(lines)


def _explain_sections(
    lazy: LazyFrame,
) -> tuple[str, list[tuple[str, str, list[tuple[int, str]]]]]:
    """Split `LazyFrame.explain` into (title, [(label, value, [(depth, detail line)])]).

    Each unindented line of the text opens a section (``label: value``); the
    indented lines under it are its details, with their indentation depth. A
    plan that cannot be built is shown as an ``error`` section instead of raising.
    """
    try:
        lines = lazy.explain().splitlines()
    except Exception as exc:  # a display must not raise; show why the plan fails
        steps = [(0, s.describe()) for s in lazy.steps]
        return (
            f"over a {type(lazy.frame).__name__}",
            [
                ("steps", "" if steps else "(none)", steps),
                ("error", f"{type(exc).__name__}: {exc}", []),
            ],
        )
    title = lines[0].removeprefix("colbridge plan ")
    sections: list[tuple[str, str, list[tuple[int, str]]]] = []
    for line in lines[1:]:
        stripped = line.lstrip(" ")
        if stripped == line or not sections:
            label, _, value = line.partition(":")
            sections.append((label.strip(), value.strip(), []))
        else:
            sections[-1][2].append(((len(line) - len(stripped)) // 2 - 1, stripped))
    return title, sections
