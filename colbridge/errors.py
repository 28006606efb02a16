"""Errors: one base class, each subclass also the builtin it refines.

Every error class of colbridge lives here, with the builders of its common
messages, so any layer can raise it without importing another layer.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    "SchemaError",
    "ShapeError",
    "UnsupportedOperationError",
    "UnsupportedTypeError",
    "UserFunctionError",
]


class ColbridgeError(Exception):
    """Base class of every error colbridge raises; catch it to catch them all."""


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


class DeviceFallbackWarning(UserWarning):
    """A GPU was asked for but the work ran on the CPU (``fallback="cpu"``)."""


class WritableAliasWarning(UserWarning):
    """A read-only view went to a consumer that ignores DLPack's read-only flag (torch).

    The consumer's tensor shares the source frame's memory and can write into it;
    `colbridge.to_torch` copies instead (or shares knowingly, ``writable_alias=True``).
    """


__all__ += ["DeviceFallbackWarning", "WritableAliasWarning"]
