"""User functions: Python functions traced into expressions, or compiled and called per row.

Stage: expressions. `udf` wraps a Python function. Calling the wrapper with
expressions, column names or numbers returns an `Expr`:

* **traced** (the default when it works): the function is called once with
  placeholder columns; what it returns is an expression tree, which is kept and
  re-used with the real arguments substituted on each call. The result is
  ordinary IR: it fuses with the rest of the plan and runs on every target.
* **compiled** (``return_dtype=...``, or when tracing meets Python control flow on
  an expression: ``if x > 0``, ``math.sin(x)``, ``int(x)``, ``range(x)``): the
  function is compiled by numba as a scalar function and called row by row from
  inside the fused kernel (a `Call` node). It sees valid rows only: a null in
  any argument gives a null result and the function is not called on that row.

Nothing here imports numba until a compiled function is typed.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
from collections.abc import Callable
from typing import Any, overload

from colbridge.errors import UnsupportedTypeError, UserFunctionError
from colbridge.expr.api import Expr, ScalarUseError, _arg_node, _WhenThen, to_node
from colbridge.expr.nodes import Call, Column, Node, transform
from colbridge.types import DType, parse_dtype

__all__ = ["UserFunction", "udf"]

_TOKENS = itertools.count(1)

#: Types a compiled function may return (numba's name -> colbridge's).
_NUMBA_RETURN = {
    "bool": DType.BOOL,
    "int8": DType.INT8,
    "int16": DType.INT16,
    "int32": DType.INT32,
    "int64": DType.INT64,
    "uint8": DType.UINT8,
    "uint16": DType.UINT16,
    "uint32": DType.UINT32,
    "uint64": DType.UINT64,
    "float32": DType.FLOAT32,
    "float64": DType.FLOAT64,
}


class UserFunction:
    """A Python function usable in expressions; made by `udf`.

    Compares and hashes by identity: the IR and the kernel caches tell two
    functions apart even if their names and code are the same.

    Examples
    --------
    >>> import colbridge as cb
    >>> double = cb.udf(lambda x: x * 2)
    >>> double("a")
    <Expr (col("a") * lit(2))>
    >>> double.is_compiled
    False
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        return_dtype: DType | None = None,
        compiled: bool = False,
        name: str | None = None,
        skip_nulls: bool = True,
    ) -> None:
        if not callable(fn):
            msg = f"`cb.udf` needs a function, got {type(fn).__name__} {fn!r}"
            raise UserFunctionError(msg)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__
        self.return_dtype = return_dtype
        #: False: called on every row with each argument's value and validity flag
        self.skip_nulls = skip_nulls
        #: a number unique in this process: part of the kernel cache keys
        self.token = next(_TOKENS)
        self._force_compiled = compiled or return_dtype is not None or not skip_nulls
        #: traced expression per number of arguments (None: the function is compiled)
        self._traced: dict[int, Node | None] = {}
        #: numba dispatcher and result type per argument dtypes (compiled functions)
        self._dispatcher: Any = None
        self._types: dict[tuple[DType, ...], DType] = {}
        #: whether the function returns (value, valid), per argument dtypes
        self._with_validity: dict[tuple[DType, ...], bool] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn, updated=())  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"udf:{self.name}#{self.token}"

    def __getstate__(self) -> dict[str, Any]:
        # plans travel to other processes (Dask, process pools) with their functions; the
        # dispatcher, the lock and the token are this process's own
        return {"fn": self.fn, "name": self.name, "return_dtype": self.return_dtype,
                "compiled": self._force_compiled, "skip_nulls": self.skip_nulls}  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["fn"], return_dtype=state["return_dtype"],  # type: ignore[misc]
                      compiled=state["compiled"], name=state["name"],
                      skip_nulls=state["skip_nulls"])  # fmt: skip

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Expr:
        """The function applied to ``args``: expressions, column names or numbers."""
        self._check_arity(len(args))
        nodes = tuple(_arg_node(a) for a in args)
        traced = self._trace(len(args))
        if traced is None:
            return Expr(Call(self, nodes))
        real: dict[Node, Node] = {_placeholder(self.token, k): n for k, n in enumerate(nodes)}
        return Expr(transform(traced, lambda n: real.get(n, n)))

    @property
    def is_compiled(self) -> bool:
        """Whether calls become compiled calls rather than traced expressions.

        Known once the function has been called (or forced by ``return_dtype``).
        """
        return self._force_compiled or any(t is None for t in self._traced.values())

    def _check_arity(self, count: int) -> None:
        try:
            signature = inspect.signature(self.fn)
        except (TypeError, ValueError):  # a builtin without a signature: numba decides
            return
        try:
            signature.bind(*range(count if self.skip_nulls else 2 * count))
        except TypeError as exc:
            params = ", ".join(signature.parameters)
            msg = (
                f"user function `{self.name}({params})` called with {count} argument(s): "
                f"{exc}; pass one expression, column name or number per parameter"
            )
            if not self.skip_nulls:
                msg += (" (with `skip_nulls=False` it takes each argument's value and "
                        "validity flag: `f(x, x_valid, ...)`)")  # fmt: skip
            raise UserFunctionError(msg) from None

    def _trace(self, count: int) -> Node | None:
        if self._force_compiled:
            return None
        if count in self._traced:
            return self._traced[count]
        placeholders = [Expr(_placeholder(self.token, k)) for k in range(count)]
        try:
            out = self.fn(*placeholders)
        except ScalarUseError:
            traced = None  # Python control flow or `math` on an expression: compile it
        except Exception as exc:
            msg = (
                f"tracing user function `{self.name}` over expressions failed: "
                f"{type(exc).__name__}: {exc}; use expression methods and operators "
                "(`.sin()`, `cb.when(...)`), or pass `return_dtype=` to compile it as a "
                "numba scalar function"
            )
            raise UserFunctionError(msg) from exc
        else:
            traced = self._result_node(out)
        self._traced[count] = traced
        return traced

    def _result_node(self, out: Any) -> Node:
        if isinstance(out, (Expr, _WhenThen)):
            return to_node(out)
        if isinstance(out, (bool, int, float)) or (
            getattr(out, "ndim", None) == 0 and getattr(out, "dtype", None) is not None
        ):
            return to_node(out)
        msg = (
            f"user function `{self.name}` returned a {type(out).__name__} when traced; a "
            "traced function must return an expression or a number (to return several "
            "values, write one function per output)"
        )
        raise UserFunctionError(msg)

    # -- compiled functions ---------------------------------------------------------------
    def dispatcher(self) -> Any:
        """The numba dispatcher of the function (made once, compiled per argument types)."""
        with self._lock:
            if self._dispatcher is None:
                import numba

                self._dispatcher = numba.njit(nogil=True)(self.fn)
            return self._dispatcher

    def result_type(self, args: tuple[DType, ...]) -> DType:
        """The dtype of the function's result for arguments of ``args`` (compiling it).

        ``return_dtype`` when given (the value is converted to it); otherwise the
        type numba infers for these argument types.
        """
        hit = self._types.get(args)
        if hit is not None:
            return hit
        import numba
        from numba.core.errors import NumbaError

        dispatcher = self.dispatcher()
        signature: tuple[Any, ...] = tuple(numba.from_dtype(t.numpy) for t in args)
        if not self.skip_nulls:  # each value is followed by its validity flag
            signature = tuple(x for t in signature for x in (t, numba.boolean))
        try:
            dispatcher.compile(signature)
        except NumbaError as exc:
            first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), str(exc))
            shown = ", ".join(str(t) for t in args)
            msg = (
                f"user function `{self.name}` cannot be compiled by numba for arguments "
                f"({shown}): {first}; write it in numba's subset of Python (numbers, `math`, "
                "`if`, loops), or write it with expressions so it can be traced"
            )
            raise UserFunctionError(msg) from None
        if self.return_dtype is not None:
            returned = dispatcher.overloads[signature].signature.return_type
            items = getattr(returned, "types", None)
            if not self.skip_nulls and items is not None and len(items) == 2:
                self._with_validity[args] = True
            result = self.return_dtype
        else:
            returned = dispatcher.overloads[signature].signature.return_type
            items = getattr(returned, "types", None)
            if not self.skip_nulls and items is not None and len(items) == 2 \
                    and str(items[1]) == "bool":  # fmt: skip
                self._with_validity[args] = True
                returned = items[0]
            found = _NUMBA_RETURN.get(str(returned))
            if found is None:
                msg = (
                    f"user function `{self.name}` returns {returned} for arguments "
                    f"({', '.join(str(t) for t in args)}); a compiled function must return "
                    "one number or boolean (with `skip_nulls=False`, or a pair (value, "
                    "valid)): return one value, or pass `return_dtype=`"
                )
                raise UserFunctionError(msg)
            result = found
        self._types[args] = result
        return result


    def returns_validity(self, args: tuple[DType, ...]) -> bool:
        """Whether the function returns (value, valid) for arguments of ``args`` (typed first)."""
        return self._with_validity.get(args, False)


def _placeholder(token: int, k: int) -> Column:
    # a NUL byte no frame library lets a column name begin with: never a real column
    return Column(f"\0udf{token}:arg{k}")


_RETURN_DTYPES = ", ".join(sorted(d.value for d in _NUMBA_RETURN.values() if d is not DType.BOOL))


def _return_dtype(value: Any, name: str) -> DType:
    try:
        dtype = parse_dtype(value)
    except Exception:  # every unreadable type gets the same message
        dtype = None
    if dtype is None or dtype not in _NUMBA_RETURN.values():
        msg = (
            f"`return_dtype={value!r}` of user function `{name}` is not a type a compiled "
            f"function can return; use bool or one of {_RETURN_DTYPES}"
        )
        raise UnsupportedTypeError(msg)
    return dtype


@overload
def udf(
    fn: Callable[..., Any],
    *,
    return_dtype: Any = None,
    compiled: bool = False,
    skip_nulls: bool = True,
) -> UserFunction: ...


@overload
def udf(
    fn: None = None, *, return_dtype: Any = None, compiled: bool = False, skip_nulls: bool = True
) -> Callable[[Callable[..., Any]], UserFunction]: ...


def udf(
    fn: Callable[..., Any] | None = None,
    *,
    return_dtype: Any = None,
    compiled: bool = False,
    skip_nulls: bool = True,
) -> UserFunction | Callable[[Callable[..., Any]], UserFunction]:
    """A Python function usable in expressions, traced when it can be, else compiled.

    Parameters
    ----------
    fn
        A function of one or more values. Used as ``@cb.udf`` or
        ``@cb.udf(return_dtype="float64")`` it decorates.
    return_dtype
        Compile the function with numba and convert its result to this type (bool or a
        numeric type). Without it the function is traced; if tracing meets Python control
        flow on an expression (``if``, ``math.*``, ``int()``), it is compiled and typed by
        numba's inference for the argument types.
    compiled
        Compile even if the function could be traced.
    skip_nulls
        True (the default): a compiled function is called on valid rows only, a null
        argument gives a null result. False: it is compiled and called on every row
        with each argument's value followed by a bool saying whether it is valid
        (``f(x, x_valid, y, y_valid)``; a value under a null is unspecified), and may
        return a pair ``(value, valid)`` to make nulls itself.

    Returns
    -------
    UserFunction
        Call it with expressions, column names (``"a"`` is ``cb.col("a")``) or numbers;
        it returns an `Expr`.

    Notes
    -----
    A traced function becomes ordinary expressions: it fuses with the rest of the plan
    and runs on every device. A compiled function is called from inside the fused CPU
    kernel for each row whose arguments are all valid (a null argument gives null); a
    segment that calls one runs on the host CPU when ``device="cuda"``, as `explain`
    and ``last_report`` say. See ``docs/udf.md``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import colbridge as cb
    >>> @cb.udf
    ... def hypot(x, y):
    ...     return (x * x + y * y).sqrt()
    >>> t = pa.table({"a": [3.0, 5.0], "b": [4.0, 12.0]})
    >>> cb.lazy(t).with_columns(h=hypot("a", "b")).compute().column("h").to_pylist()
    [5.0, 13.0]
    >>> @cb.udf
    ... def clamp(x):
    ...     if x < 0.0:
    ...         return 0.0
    ...     return x
    >>> t = pa.table({"a": [-1.0, 2.0, None]})
    >>> cb.lazy(t).with_columns(c=clamp("a")).compute().column("c").to_pylist()
    [0.0, 2.0, None]
    """

    def wrap(f: Callable[..., Any]) -> UserFunction:
        if isinstance(f, UserFunction):
            f = f.fn
        dtype = None if return_dtype is None else _return_dtype(return_dtype, _name_of(f))
        return UserFunction(f, return_dtype=dtype, compiled=compiled, skip_nulls=skip_nulls)

    if fn is None:
        return wrap
    return wrap(fn)


def _name_of(f: Any) -> str:
    return str(getattr(f, "__name__", type(f).__name__))


def function_args_error(func: UserFunction, k: int, arg: Node, what: str) -> UnsupportedTypeError:
    """The error for argument ``k`` of compiled ``func`` being of type ``what``."""
    msg = (
        f"compiled user function `{func.name}`: argument {k + 1} `{arg!r}` is {what}; a "
        "compiled function takes numbers and booleans only. Write the function with "
        "expressions so it is traced (string, date and category methods work there), or "
        "compute the column with pyarrow first"
    )
    return UnsupportedTypeError(msg)

