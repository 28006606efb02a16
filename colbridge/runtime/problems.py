"""Runtime: every problem of a plan that does not type, found at once (`PlanProblemsError`).

Stage: runtime. Typing a plan stops at its first error. Only then, off the
happy path, `located` types the queued steps again one output at a time, each
against the columns the outputs before it that did type make: an output that
fails is a `PlanProblem` and is unknown from then on, so an expression reading
it is not checked (and not reported again). A plan with one problem raises its
error as it is, with `ColbridgeError.problems` telling where it is; a plan with
several raises one `PlanProblemsError` listing them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from colbridge.errors import ColbridgeError, PlanProblem, PlanProblemsError
from colbridge.expr.nodes import Column, Node, children
from colbridge.plan.logical import Step
from colbridge.plan.planner import plan_segments, unknown_column
from colbridge.plan.typecheck import ColumnType, failed_node
from colbridge.runtime.execute import Columns, input_schema, type_specs

__all__ = ["Found", "collect", "located"]


def located(
    exc: ColbridgeError, steps: tuple[Step, ...], names: tuple[str, ...], columns: Columns
) -> ColbridgeError:
    """What typing ``steps`` raises, now that it raised ``exc``: every problem at once.

    ``exc`` itself (its ``problems`` set to where it is, when that is found) where the
    plan has one problem; else a `PlanProblemsError` that is also an instance of
    ``exc``'s class.
    """
    try:
        found = collect(steps, names, columns)
    except Exception:  # the search for the others must never hide the error itself
        return exc
    if len(found.problems) == 1:
        (problem,) = found.problems
        if type(problem.error) is type(exc) and str(problem.error) == str(exc):
            exc.problems = (problem,)
        return exc
    if not found.problems:
        return exc
    return PlanProblemsError.raised_as(type(exc), found.problems, found.unchecked)


@dataclass
class Found:
    """The problems of a plan, in step order, and the outputs not checked because of them."""

    problems: list[PlanProblem] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)


class _Plan:
    """The steps that type so far, and the columns they make."""

    def __init__(self, names: tuple[str, ...], columns: Columns) -> None:
        self.names = names
        self.columns = columns
        self.steps: list[Step] = []
        self.schema: Mapping[str, ColumnType] = input_schema(names, columns)

    def types(self, extra: Sequence[Step] = ()) -> Mapping[str, ColumnType]:
        """The columns after the steps and ``extra``; raises what typing them raises."""
        steps = (*self.steps, *extra)
        if not steps:
            return input_schema(self.names, self.columns)
        schema = type_specs(plan_segments(steps, self.names), self.names, self.columns)[1]
        missing = unknown_column(steps, self.names)  # as `PreparedPlan.typed` checks
        if missing is not None:
            raise missing
        return schema

    def add(self, step: Step) -> None:
        """Keep ``step``; raises (keeping nothing) where the plan with it does not type."""
        schema = self.types([step])
        self.steps.append(step)
        self.schema = schema


def collect(steps: Sequence[Step], names: tuple[str, ...], columns: Columns) -> Found:
    """Every output (and filter, and group key) of ``steps`` that fails to type, located.

    Each is typed on its own, after the steps before it less what failed there: a
    problem in step 2 is found whatever step 1 holds, unless it reads an output of
    step 1 that fails (then it is listed in ``unchecked``).
    """
    collector = _Collector(_Plan(names, columns))
    for number, step in enumerate(steps, 1):
        if not collector.step(number, step):
            break  # the outputs type one by one but not together: report what is found
    return collector.found


class _Collector:
    """Walks the steps, keeping what types and noting what does not."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.found = Found()
        #: outputs that fail, or read one that does: unknown columns from then on
        self.failed: set[str] = set()

    def step(self, number: int, step: Step) -> bool:
        """Check one step's parts; False where what types of it does not type together."""
        text = step.describe()
        if step.kind == "filter":
            ((_, pred),) = step.items
            if self._checked(number, text, step, "", pred):
                return self._add(step)
            return True
        bad: set[str] = set()
        keys: list[tuple[str, Node]] = []
        for name, key in step.keys:  # a grouping's keys, each on its own
            if self._checked(number, text, Step("group_by", (), ((name, key),)), name, key):
                keys.append((name, key))
            else:
                bad.add(name)
        items: list[tuple[str, Node]] = []
        for name, node in step.items:
            if self._checked(number, text, Step(step.kind, ((name, node),), tuple(keys)),
                             name, node):  # fmt: skip
                items.append((name, node))
            else:
                bad.add(name)
        good = Step(step.kind, tuple(items), tuple(keys))
        if step.kind == "with_columns":
            self.failed = (self.failed - {name for name, _ in items}) | bad
            return self._add(good) if items else True
        self.failed = bad  # a select or a grouping: only its outputs are left
        return self._add(good)

    def _checked(self, number: int, text: str, trial: Step, column: str, node: Node) -> bool:
        """Whether ``node`` types (as ``trial``, after the plan so far); noted when not."""
        reads = [n for n in _reads(node, self.plan.schema) if n in self.failed]
        if reads:
            what = f"output `{column}`" if column else "filter"
            self.found.unchecked.append(
                f"step {number} {what} (reads {', '.join(f'`{n}`' for n in reads)})"
            )
            return False
        try:
            self.plan.types([trial])
        except ColbridgeError as exc:
            self.found.problems.append(_problem(number, text, column, node, exc,
                                                self.plan.schema))  # fmt: skip
            return False
        return True

    def _add(self, step: Step) -> bool:
        try:
            self.plan.add(step)
        except ColbridgeError:
            return False
        return True


def _reads(node: Node, schema: Mapping[str, ColumnType]) -> list[str]:
    """The columns ``node`` reads, in the order they appear."""
    out: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        # `pi`, `e` of a string expression are no columns where none has the name
        if (
            isinstance(current, Column)
            and current.name not in out
            and not (current.constant is not None and current.name not in schema)
        ):
            out.append(current.name)
        stack.extend(reversed(children(current)))
    return out


def _problem(
    number: int,
    text: str,
    column: str,
    node: Node,
    exc: ColbridgeError,
    schema: Mapping[str, ColumnType],
) -> PlanProblem:
    inputs = []
    for name in _reads(node, schema):
        inputs.append((name, _type_text(schema, name) if name in schema else "not found"))
    at = failed_node(exc)
    part = ""
    if at is not None and at != node and any(at == n for n in _subtrees(node)):
        part = repr(at)  # shown only where it is part of the expression as written
    return PlanProblem(number, text, column, repr(node), part, tuple(inputs), exc)


def _subtrees(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(children(current))
    return out


def _type_text(schema: Mapping[str, ColumnType], name: str) -> str:
    try:
        info = schema[name]
    except ColbridgeError:
        return "a type colbridge cannot read"  # e.g. a pandas object column
    # colbridge's type names (those of its messages), Arrow's where it has none (strings)
    return str(info.dtype) if info.dtype is not None else str(info.arrow_type)
