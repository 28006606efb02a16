"""Runtime: what a plan will do (and what its last compute did), as data with three renderings.

Stage: runtime. `build_report` gathers a `PlanReport` (steps, segments with
their passes and kernels, columns read, copies, device, the kernel source when
asked); `PlanReport.to_text` is `LazyFrame.explain`, and `to_html` /
`to_markdown` are the notebook displays, rendered from the same data, never
from the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from typing import Any

from colbridge.backends import get_backend
from colbridge.backends.common import per_group_level, split_level
from colbridge.backends.device import DeviceChoice, resolve_device
from colbridge.backends.scans import lag_text
from colbridge.codegen.cuda_scans import device_scan_reason
from colbridge.columns.frames import FrameAdapter
from colbridge.errors import PlanProblem
from colbridge.expr.nodes import HOST_SCANS, ROLLING_BY_FUNCS, STRING_COMPARISONS, GroupAgg
from colbridge.plan.logical import Step
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.runtime.execute import Columns, PreparedPlan, nan_null_inputs

__all__ = ["PlanReport", "Section", "build_report", "describe"]


@dataclass
class Section:
    """One part of a report: ``label: value``, detail lines (with depth), kernel sources."""

    label: str
    value: str = ""
    details: list[tuple[int, str]] = field(default_factory=list)
    #: (title, source text) of generated kernels
    sources: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class PlanReport:
    """A plan described for people; render with `to_text`, `to_html` or `to_markdown`."""

    title: str
    sections: list[Section]
    #: what keeps the plan from running, where planning located it (see `PlanProblemsError`)
    problems: tuple[PlanProblem, ...] = ()

    @classmethod
    def for_error(cls, frame_kind: str, steps: tuple[Step, ...], exc: Exception) -> PlanReport:
        """A report for a plan that cannot be built: the steps, and why.

        A planning error that knows where it is (``exc.problems``) is listed as a
        ``problems`` section, one numbered entry per problem.
        """
        described = [(0, f"{i + 1}. {s.describe()}") for i, s in enumerate(steps)]
        sections = [Section("steps", "" if described else "(none)", described)]
        problems: tuple[PlanProblem, ...] = getattr(exc, "problems", ())
        if problems:
            listed = []
            for k, problem in enumerate(problems, 1):
                first, *rest = problem.lines()
                listed.append((0, f"{k}. {first}"))
                listed += [(1, part) for line in rest for part in line.split("\n") if part]
            unchecked = getattr(exc, "unchecked", ())
            if unchecked:
                listed.append((0, "not checked, as they read an output that fails: "
                                  + ", ".join(unchecked)))  # fmt: skip
            sections.append(Section("problems", f"{len(problems)}; the plan does not run",
                                    listed))  # fmt: skip
        else:
            sections.append(Section("error", f"{type(exc).__name__}: {exc}"))
        return cls(f"over a {frame_kind}", sections, problems)

    def to_text(self) -> str:
        """Plain text (what ``explain()`` returns)."""
        lines = [f"colbridge plan {self.title}"]
        for section in self.sections:
            lines.append(f"{section.label}: {section.value}".rstrip())
            lines += [f"{'  ' * (depth + 1)}{text}" for depth, text in section.details]
            for title, source in section.sources:
                lines += [f"  --- {title} ---", source]
        return "\n".join(lines)

    def to_html(self) -> str:
        """An HTML table for notebooks (every piece of text escaped)."""
        rows = []
        for section in self.sections:
            items = "".join(
                f'<li style="margin-left:{depth}em"><code>{escape(text)}</code></li>'
                for depth, text in section.details
            )
            listing = f'<ul style="margin:0;padding-left:1em">{items}</ul>' if items else ""
            code = "".join(
                f"<details><summary>{escape(title)}</summary><pre>{escape(src)}</pre></details>"
                for title, src in section.sources
            )
            rows.append(
                f'<tr><th style="text-align:left;vertical-align:top">{escape(section.label)}</th>'
                f'<td style="text-align:left">{escape(section.value)}{listing}{code}</td></tr>'
            )
        return (
            f'<div class="colbridge-lazyframe"><p><strong>colbridge.LazyFrame</strong>: '
            f"{escape(self.title)}</p><table>{''.join(rows)}</table></div>"
        )

    def to_markdown(self) -> str:
        """A Markdown nested list for notebooks (markup outside code escaped)."""
        lines = [f"**colbridge.LazyFrame**: {_md_text(self.title)}", ""]
        for section in self.sections:
            value = f": {_md_text(section.value)}" if section.value else ""
            lines.append(f"- **{_md_text(section.label)}**{value}")
            lines += [f"{'  ' * (depth + 1)}- {_md_code(text)}" for depth, text in section.details]
            for title, source in section.sources:
                lines += [f"  - {_md_text(title)}", "", "    ```", *(
                    "    " + s for s in source.splitlines()), "    ```"]  # fmt: skip
        return "\n".join(lines)


def _md_text(value: str) -> str:
    return re.sub(r"([\\`*_\[\]<>&#|~])", r"\\\1", value)


def _md_code(value: str) -> str:
    if "`" in value:
        return f"`` {value} ``"
    return f"`{value}`"


def build_report(
    *,
    frame_kind: str,
    num_rows: int,
    steps: tuple[Step, ...],
    segments: list[Segment],
    choice: DeviceChoice,
    copies: list[str],
    last: Any = None,
    sources: dict[int, list[tuple[str, str]]] | None = None,
    target: str | None = None,
    streamed: bool = False,
) -> PlanReport:
    """Describe a typed plan.

    ``last`` is the previous compute's report, ``sources`` the kernel sources per
    segment index (when asked for), ``target`` the backend whose kernels are
    described (default: the device chosen); ``streamed``: the plan runs batch by
    batch over a stream (its scans carry their state on the host).
    """
    sections = [Section("device", f"{choice.target} ({choice.note})")]
    described = [(0, f"{i + 1}. {s.describe()}") for i, s in enumerate(steps)]
    sections.append(Section("steps", "", described or [(0, "(none)")]))
    for k, seg in enumerate(segments):
        npasses, nkernels, grouped_lines = _grouped_work(seg, target or choice.target, streamed)
        npasses += len(seg.agg_levels)
        nkernels += sum(bool(aggs) + len(by_keys) + len(per_group_level(level))
                        for level in seg.agg_levels
                        for aggs, by_keys in [split_level(level)])  # fmt: skip
        npasses -= sum(all(isinstance(a, GroupAgg) and a.func == "each" for a in level)
                       for level in seg.agg_levels)  # a pass over the groups, not the rows
        final = seg.group_by is None and bool(seg.outputs or seg.mask is not None) \
            and not seg.outputs_are_reductions  # fmt: skip
        npasses += final
        nkernels += final or (seg.group_by is not None and bool(seg.outputs))
        lagged = {} if streamed else seg.lagged
        reads = list(dict.fromkeys([*seg.frame_inputs, *(r.source for r in lagged.values())]))
        scanned_in = len(seg.scans) - len(lagged)
        section = Section(
            f"segment {k + 1}",
            f"{npasses} pass(es) over the rows, {nkernels} fused kernel(s); "
            f"reads {reads or 'no columns'}"
            + (f" and {scanned_in} scan result(s)" if scanned_in else ""),
        )
        section.details += grouped_lines
        if seg.host_functions:
            names = ", ".join(f"`{n}`" for n in seg.host_functions)
            section.details.append((0, (
                f"compiled user function(s) {names} called inside the fused kernel; CUDA "
                "C cannot call them: this segment runs on the host CPU on every device"
            )))  # fmt: skip
        for level, reductions in enumerate(seg.agg_levels):
            aggs, by_keys = split_level(reductions)
            if aggs:
                section.details.append(
                    (0, f"reduction pass {level + 1}: " + ", ".join(repr(a) for a in aggs))
                )
            for keys, grouped in by_keys.items():
                section.details.append((0, (
                    f"grouped reduction pass {level + 1} by [{keys!r}] (partial tables by "
                    "group id, merged): " + ", ".join(repr(a) for a in grouped))))  # fmt: skip
            for keys, each in per_group_level(reductions).items():
                section.details.append((0, (
                    f"per-group pass after pass {level} (one row per group of [{keys!r}], not "
                    "per row): " + ", ".join(repr(a.arg) for a in each))))  # fmt: skip
        if seg.group_by is not None:
            outs = [name for name, _ in seg.outputs]
            section.details.append((0, (
                f"rows out: one per group of [{seg.group_by.keys!r}] (first-appearance "
                f"order), keys {list(seg.group_by.names)} and {outs}")))  # fmt: skip
        elif seg.outputs or seg.mask is not None:
            outs = [name for name, _ in seg.outputs]
            extra = " + filter mask" if seg.mask is not None else ""
            section.details.append((0, f"the reductions as they are (no elementwise pass): {outs}"
                                    if seg.outputs_are_reductions
                                    else f"elementwise pass: computes {outs}{extra}"))  # fmt: skip
            for name, node in seg.outputs:
                kind = seg.output_logical.get(name) or seg.output_types[name]
                section.details.append((1, f"{name}: {kind} = {node!r}"))
            if seg.mask is not None:
                section.details.append((1, f"filter: {seg.mask!r}"))
        kept = [n for n, s in seg.passthrough.items() if n == s]
        if kept:
            section.details.append((0, f"passed through without a copy: {kept}"))
        renamed = {n: s for n, s in seg.passthrough.items() if n != s and s not in seg.scans}
        scanned = {n: seg.scans[s] for n, s in seg.passthrough.items()
                   if s in seg.scans and s not in lagged}  # fmt: skip
        moved = {n: seg.scans[s] for n, s in seg.passthrough.items() if s in lagged}
        if moved:
            section.details.append((0, "shifted without a copy (the rows that stay, and the "
                                    "nulls or fill values moved in, as two chunks): "
                                    + ", ".join(f"{n} = {s!r}" for n, s in moved.items())))
        if scanned:
            section.details.append((0, "the scan pass's results as they are, without a copy: "
                                    + ", ".join(f"{n} = {s!r}" for n, s in scanned.items())))
        if renamed:
            section.details.append((0, f"renamed without a copy: {renamed}"))
        if sources is not None:
            section.sources = sources.get(k, [])
        sections.append(section)
    sections.append(Section("copies", "; ".join(copies) or "none (every input read in place)"))
    if last is not None and last.device is not None:
        st = last.stats
        sections.append(Section(
            "last compute",
            f"{len(st.kernels)} kernel launch(es), {st.cache_hits} cache hit(s), "
            f"{st.compiled} compiled; device {last.device.target} ({last.device.note})",
        ))  # fmt: skip
        if last.copies:
            sections.append(Section("last compute copied", "; ".join(last.copies)))
    return PlanReport(f"over a {frame_kind} frame of {num_rows} rows", sections)


def _grouped_work(seg: Segment, target: str,
                  streamed: bool = False) -> tuple[int, int, list[tuple[int, str]]]:  # fmt: skip
    """Passes, kernels and report lines of a segment's factorize work (before its passes).

    ``target``: the backend whose kernels are described (``"cpu"`` or ``"cuda"``);
    ``streamed``: the plan runs over a stream's batches.
    """
    lines: list[tuple[int, str]] = []
    passes = kernels = 0
    if seg.pre is not None:
        pre_passes, pre_kernels, pre_lines = _grouped_work(seg.pre, target, streamed)
        levels = len(seg.pre.agg_levels)
        passes += pre_passes + levels + 1
        kernels += pre_kernels + levels + 1
        lines += pre_lines
        lines.append((0, "columns computed for the grouping: " + ", ".join(
            f"{name} = {node!r}" for node, name in seg.host_names.items())))  # fmt: skip
    for keys in seg.key_sets:
        passes += 1
        lines.append((0, (
            f"group ids pass: [{keys!r}] factorized into dense int32 ids in first-appearance "
            "order (a null key is a group; strings and categories by dictionary, never as "
            "bytes); kept on the handle while the key columns are unchanged")))  # fmt: skip
    if seg.host_aggs:
        lines.append((0, "taken from the groups, no kernel: " + ", ".join(
            repr(a) for a in seg.host_aggs)))  # fmt: skip
    for name, scan in seg.scans.items():
        if name in seg.lagged and not streamed:
            lines.append((0, f"no scan pass for {scan!r}: {lag_text(scan)} (a shift fused "
                          "into their kernels)"))  # fmt: skip
            continue
        passes += 1
        order = "frame order" if not scan.keys.order_by else \
            f"the order of {', '.join(map(repr, scan.keys.order_by))}"  # fmt: skip
        groups = f"each group on its own, rows in {order}" if scan.keys.exprs \
            else f"the rows in {order}"  # fmt: skip
        why = device_scan_reason(scan.func, streamed) if target == "cuda" else None
        if target == "cuda" and why is None and scan.keys.order_by:
            why = "rows put in order on the host"
        if scan.func in HOST_SCANS:
            how = {"rank": "ranked", "interpolate": "interpolated",
                   "rolling_quantile": "windowed (each window's values kept sorted)",
                   "rolling_rank": "ranked in its window (each window's values kept sorted)",
                   "ewm_mean_by": "weighted by its `by` steps (rows in their order)",
                   "ewm_sum": "summed with decaying weights",
                   "to_string": "written as text (each distinct value once)",
                   "concat_str": "joined (each distinct combination once)",
                   "rolling_skew": "windowed (each window's moments taken exactly)",
                   "rolling_kurtosis": "windowed (each window's moments taken exactly)",
                   "sort": "sorted (a stable sort)", "reverse": "reversed",
                   "sort_by": "sorted by its `by` keys (a stable sort)",
                   "arg_sort": "sorted to indices (a stable sort)",
                   }.get(scan.func, "flagged")  # fmt: skip
            if scan.func in ROLLING_BY_FUNCS:
                how = "windowed by its `by` values (rows in their order, two pointers)"
            where = f"{how} on the host CPU from its whole column" + (
                ", its result uploaded" if target == "cuda" else "")  # fmt: skip
        elif target == "cuda" and why is None:
            where = "generated CUDA scan on the device"
            if scan.keys.exprs:
                where += " (its rows ordered by group on the host first)"
            if scan.func == "ewm_mean":  # decided per column, by its values
                where += " (on the host CPU where the column holds NaN or an infinity)"
        elif target == "cuda":
            where = f"compiled scan on the host CPU ({why}), its result uploaded"
        else:
            where = "compiled scan on the host CPU"
        moves = ""
        if name in seg.scan_dicts and scan.func in STRING_COMPARISONS:
            moves = ("; it compares strings by their rank among the dictionary's (UTF-8 "
                     "byte order): a stream carries the strings themselves from batch to "
                     "batch")  # fmt: skip
        elif name in seg.scan_dicts:  # each batch of a stream numbers its strings its own way
            moves = ("; it moves string codes: a stream carries the strings themselves from "
                     "batch to batch")  # fmt: skip
        lines.append((0, (
            f"scan pass: {scan!r} over {groups}; {where} (its result is an input column of "
            f"the passes below){moves}")))  # fmt: skip
    return passes, kernels, lines


def describe(
    plan: PreparedPlan,
    adapter: FrameAdapter,
    *,
    device: str = "auto",
    target: str | None = None,
    source: bool = False,
    last: Any = None,
    streamed: bool = False,
) -> PlanReport:
    """The report of ``plan`` over the frame behind ``adapter`` (see `LazyFrame.explain`).

    ``streamed``: the plan runs batch by batch over a stream (see `build_report`).
    """
    copies: list[str] = []
    columns = Columns(adapter, copies)
    segments = plan.typed(columns).segments
    for seg in segments[:1]:  # string columns the kernels read as codes: encoded (and reported)
        for name in seg.frame_inputs:
            columns.kernel_array(name)
    choice = resolve_device(device, "cpu")
    sources = None
    if source:
        if target is None:  # the kernels of the device asked for, even without a GPU
            target = "cuda" if device.startswith("cuda") else choice.target
        sources = {}
        for k, seg in enumerate(segments):
            # a segment calling compiled user functions runs (and is shown) as the CPU's
            backend = get_backend("cpu" if seg.host_functions else target)
            arrays = {name: columns.get(name) for name in seg.frame_inputs}
            # a scan's result may hold nulls whatever its input holds
            nullable = frozenset(n for n in seg.frame_inputs if arrays[n].null_count > 0)
            lagged = {} if streamed else seg.lagged
            # a shift read in place has a bitmap where its column has one
            scans = frozenset(n for n in seg.scans if n not in lagged
                              or columns.get(lagged[n].source).null_count > 0)  # fmt: skip
            nulls = Nullability(seg.types, nullable | scans,
                                nan_null_inputs(seg, columns, lagged), lagged=lagged)
            sources[k] = backend.kernel_sources(seg, nulls, adapter.num_rows)
    return build_report(
        frame_kind=adapter.kind, num_rows=adapter.num_rows, steps=plan.steps,
        segments=segments, choice=choice, copies=copies, last=last, sources=sources,
        target=target, streamed=streamed,
    )  # fmt: skip
