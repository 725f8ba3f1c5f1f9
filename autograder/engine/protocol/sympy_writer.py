"""The child's SymPy encoder: ``srepr`` text, with each repeated subexpression printed once.

``sympy.srepr`` sorts the terms of every sum and prints every node anew; an attention
matrix repeats the same exponentials in every entry, so most of its 30 ms per matrix go
to printing what was already printed. This emitter walks ``expr.args`` as they are,
remembers the text of every node it printed, and hands anything but plain arithmetic
and elementary functions to ``sympy.srepr``. Its text is ``srepr`` syntax for the same
expression (the host's reader, :mod:`.srepr`, builds it unevaluated);
terms may come in another order than ``srepr``'s.

Imported by the zygote before the sandbox closes (with :mod:`.wire`); it holds nothing
of the grader.
"""

from __future__ import annotations

from typing import Any

__all__ = ["fast_srepr"]

#: Node types printed here as ``Name(arg, ...)``, exactly as ``srepr`` prints them.
_PLAIN = frozenset({"Add", "Mul", "Pow", "exp", "log", "sin", "cos", "tan", "tanh", "sinh",
                    "cosh", "Abs", "Max", "Min", "sign", "atan", "asin", "acos"})


def fast_srepr(value: Any) -> str:
    """``srepr``-syntax text of a SymPy expression or matrix."""
    import sympy

    memo: dict[int, str] = {}

    def emit(node: Any) -> str:
        text = memo.get(id(node))
        if text is None:
            name = type(node).__name__
            if name in _PLAIN and isinstance(node, sympy.Basic) and node.args:
                text = f"{name}({', '.join(emit(arg) for arg in node.args)})"
            else:  # atoms (their own printing is cheap) and everything rare
                text = sympy.srepr(node)
            memo[id(node)] = text
        return text

    # ids stay valid: every node is reachable from ``value``, alive until we return
    if isinstance(value, sympy.MatrixBase) and value.rows and value.cols \
            and type(value).__name__ in ("MutableDenseMatrix", "ImmutableDenseMatrix"):
        rows = ", ".join("[" + ", ".join(emit(value[i, j]) for j in range(value.cols)) + "]"
                         for i in range(value.rows))
        return f"{type(value).__name__}([{rows}])"
    if isinstance(value, sympy.Basic):
        return emit(value)
    return sympy.srepr(value)
