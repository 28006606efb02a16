"""Errors: one base class, each subclass also the builtin it refines.

Every error class of colbridge lives here, with the builders of its common
messages, so any layer can raise it without importing another layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ColbridgeError",
    "ColumnNotFoundError",
    "ComputeError",
    "CopyNotAllowedError",
    "DeviceError",
    "DuplicateColumnError",
    "ExpressionSyntaxError",
    "InvalidOperationError",
    "JobSpecError",
    "KernelCompileError",
    "NullValuesError",
    "PlanProblem",
    "PlanProblemsError",
    "SchemaError",
    "ShapeError",
    "UnsupportedOperationError",
    "UnsupportedTypeError",
    "UserFunctionError",
]


class ColbridgeError(Exception):
    """Base class of every error colbridge raises; catch it to catch them all.

    ``problems`` says where planning found the error: the step, the output and the
    input columns with their types (one `PlanProblem`; several for a
    `PlanProblemsError`). It is empty for errors raised outside planning, and for a
    plan's error whose place could not be told.
    """

    problems: tuple[PlanProblem, ...] = ()


class ColumnNotFoundError(ColbridgeError, KeyError):
    """A column named in an expression or a call does not exist."""

    def __str__(self) -> str:
        # KeyError quotes its message; show it as written instead.
        return str(self.args[0]) if self.args else ""

    @classmethod
    def from_missing(cls, name: str, available: Sequence[str]) -> ColumnNotFoundError:
        """The error for ``name`` missing from ``available``, with a did-you-mean hint."""
        import difflib

        close = difflib.get_close_matches(name, list(available), n=3, cutoff=0.5)
        msg = f"column `{name}` not found; available columns: {list(available)!r}"
        if close:
            msg += f"\n\nHint: did you mean one of these: {close!r}?"
        return cls(msg)


class DuplicateColumnError(ColbridgeError, ValueError):
    """Two outputs of one step would get the same name."""


class UnsupportedTypeError(ColbridgeError, TypeError):
    """A column's type cannot become a tensor or take part in an expression."""


class SchemaError(ColbridgeError, TypeError):
    """An expression combines types that do not go together."""


class UserFunctionError(SchemaError):
    """A user function (`colbridge.udf`) cannot be used as written.

    Wrong number of arguments, a traced function returning something that is not an
    expression, a function numba cannot compile, or a result that is not one number.
    """


class CopyNotAllowedError(ColbridgeError, ValueError):
    """A copy would be needed but the caller did not allow one."""


class NullValuesError(ColbridgeError, ValueError):
    """A column holds nulls and the caller asked for an error in that case."""


class ShapeError(ColbridgeError, ValueError):
    """Lengths or shapes do not match."""


class ExpressionSyntaxError(ColbridgeError, ValueError):
    """A string expression could not be parsed or uses something not allowed."""


class InvalidOperationError(ColbridgeError, ValueError):
    """An operation failed on the data (for example a strict cast that overflows)."""


class UnsupportedOperationError(ColbridgeError, NotImplementedError):
    """The operation exists in polars but colbridge does not run it (yet)."""


class DeviceError(ColbridgeError, RuntimeError):
    """No usable device, or the device failed."""


class KernelCompileError(ColbridgeError, RuntimeError):
    """Generated kernel source failed to compile."""


class ComputeError(ColbridgeError, RuntimeError):
    """A kernel failed while running."""


class JobSpecError(ColbridgeError, ValueError):
    """A job's input, output, options or spec file are invalid (a usage error)."""


@dataclass(frozen=True)
class PlanProblem:
    """One problem of a plan, where it is: what `PlanProblemsError` lists, one per entry.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import colbridge as cb
    >>> t = pa.table({"s": ["a"], "x": [1.0]})
    >>> q = cb.lazy(t).with_columns(y=cb.col("s") + 1, z=cb.col("x") & cb.col("x"))
    >>> try:
    ...     q.compute(device="cpu")
    ... except cb.PlanProblemsError as exc:
    ...     for p in exc.problems:
    ...         print(p.step, p.column, p.inputs, type(p.error).__name__)
    1 y (('s', 'string'),) UnsupportedOperationError
    1 z (('x', 'float64'),) SchemaError
    """

    #: 1-based number of the queued step (``q.with_columns(...)`` calls, `eval` statements)
    step: int
    #: the step as `explain()` shows it, e.g. ``with_columns(z=...)``
    step_text: str
    #: the output column, ``""`` for a filter, the key's name for a ``group_by`` key
    column: str
    #: the expression as the user wrote it
    expression: str
    #: the part of it that fails, when that is a smaller part (else ``""``)
    node: str
    #: the columns the expression reads and their types then (``"not found"`` when missing)
    inputs: tuple[tuple[str, str], ...]
    #: the error planning gives for it alone: its class, and its message with the fix
    error: ColbridgeError

    @property
    def where(self) -> str:
        """The start of the entry: the step's number and kind, and the output (or predicate)."""
        kind = self.step_text.split("(", 1)[0]
        place = f"output `{self.column}`" if self.column else "predicate"
        return f"step {self.step} ({kind}), {place}"

    def lines(self) -> list[str]:
        """The entry as lines: where, the expression and failing part, inputs, the error."""
        out = [f"{self.where}: `{self.expression}`"]
        if self.node:
            out.append(f"fails at: `{self.node}`")
        if self.inputs:
            out.append("reads: " + ", ".join(f"`{n}` ({t})" for n, t in self.inputs))
        message = str(self.error).replace("\n\n", "\n")
        out.append(f"{type(self.error).__name__}: {message}")
        return out


class PlanProblemsError(ColbridgeError):
    """Several problems in one plan, all found by one type check and raised together.

    Planning types every output of every step against the frame's schema. Where
    several fail, each is one `PlanProblem` in ``problems`` (in step order, numbered
    in the message); an output that failed is unknown from then on, and expressions
    reading it are not checked (listed in ``unchecked``), so nothing is reported
    twice. A plan with one problem raises that problem's error as it is.

    The error raised is also an instance of the class of the error planning meets
    first (`SchemaError`, `ColumnNotFoundError`, ...; not always entry 1, as typing
    takes a segment's outputs before its filter): a plan with several problems
    raised that one before they were collected, so ``except SchemaError`` around a
    compute keeps catching it, and the command line keeps its exit status. Catch
    `PlanProblemsError` to handle every collected report. A subclass per first
    class (``PlanProblemsError[SchemaError]``) is made once, on first use.

    Attributes
    ----------
    problems : tuple of PlanProblem
        Each problem, in step order; ``errors`` gives their errors alone.
    unchecked : tuple of str
        The outputs (and filters) not checked as they read an output that fails,
        e.g. ``"step 2 output `w` (reads `z`)"``.
    """

    def __init__(self, problems: Sequence[PlanProblem], unchecked: Sequence[str] = ()) -> None:
        self.problems = tuple(problems)
        self.unchecked = tuple(unchecked)
        super().__init__(self._message())

    @property
    def errors(self) -> tuple[ColbridgeError, ...]:
        """The error of each problem, in order."""
        return tuple(p.error for p in self.problems)

    def _message(self) -> str:
        lines = [f"{len(self.problems)} problems in the plan; fix each of them, then compute "
                 "again:"]  # fmt: skip
        for k, problem in enumerate(self.problems, 1):
            first, *rest = problem.lines()
            lines.append(f"{k}. {first}")
            for line in rest:
                lines += ["   " + part for part in line.split("\n")]
        if self.unchecked:
            lines.append("not checked, as they read an output that fails: "
                         + ", ".join(self.unchecked))  # fmt: skip
        return "\n".join(lines)

    def __str__(self) -> str:
        # a first class such as KeyError quotes its message; show it as written instead
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> Any:
        first = getattr(type(self), "_first", None)
        return _rebuild_problems, (self.problems, self.unchecked, first)

    @classmethod
    def raised_as(
        cls,
        first: type[ColbridgeError],
        problems: Sequence[PlanProblem],
        unchecked: Sequence[str] = (),
    ) -> PlanProblemsError:
        """The error of ``problems``, also an instance of ``first`` (see the class docstring)."""
        return _problems_class(first)(problems, unchecked)


_PROBLEM_CLASSES: dict[type[ColbridgeError], type[PlanProblemsError]] = {}


def _problems_class(first: type[ColbridgeError]) -> type[PlanProblemsError]:
    """`PlanProblemsError` that is also a ``first``, made once per class."""
    if issubclass(first, PlanProblemsError):
        return first
    made = _PROBLEM_CLASSES.get(first)
    if made is None:
        made = type("PlanProblemsError", (PlanProblemsError, first), {
            "_first": first, "__module__": __name__,
            "__qualname__": f"PlanProblemsError[{first.__name__}]",
            "__doc__": f"`PlanProblemsError` whose first problem is a `{first.__name__}`.",
        })  # fmt: skip
        _PROBLEM_CLASSES[first] = made
    return made


def _rebuild_problems(
    problems: tuple[PlanProblem, ...],
    unchecked: tuple[str, ...],
    first: type[ColbridgeError] | None,
) -> PlanProblemsError:
    """Unpickle a `PlanProblemsError` (its class is made at run time)."""
    cls = PlanProblemsError if first is None else _problems_class(first)
    return cls(problems, unchecked)


class DeviceFallbackWarning(UserWarning):
    """A GPU was asked for but the work ran on the CPU (``fallback="cpu"``)."""


class WritableAliasWarning(UserWarning):
    """A read-only view went to a consumer that ignores DLPack's read-only flag (torch).

    The consumer's tensor shares the source frame's memory and can write into it;
    `colbridge.to_torch` copies instead (or shares knowingly, ``writable_alias=True``).
    """


__all__ += ["DeviceFallbackWarning", "WritableAliasWarning"]
