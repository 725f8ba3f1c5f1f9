"""Two checks IPython makes on every cell, answered without tokenizing or compiling it
when the cell's text already settles them.

For each cell IPython tokenizes it in pure Python, looking for its own syntax
(``%magic``, ``!shell``, ``name?``, the ``,``/``;``/``/`` autocall escapes), and compiles it
once more than it runs it, to learn whether it awaits at the top level (both are
measured in docs/benchmarks.md).

Both answers are known from the text alone for most cells: a cell with none of ``%!?``
anywhere and no line starting with ``,``, ``;`` or ``/`` holds nothing a token
transformer finds (each one needs one of those tokens, the escapes at the start of a
logical line, which always starts a physical line), and a cell without the words
``await`` and ``async`` cannot be a coroutine. Every other cell takes IPython's own
path. ``tests/test_cellpaths.py`` compares both answers with IPython's on every cell of
the course and on generated cells.
"""

from __future__ import annotations

from typing import Any

__all__ = ["needs_token_transforms", "may_await", "install"]

_ANYWHERE = frozenset("%!?")
_LINE_START = (",", ";", "/")


def needs_token_transforms(lines: list[str]) -> bool:
    """Whether IPython's token transformers could find anything in ``lines``."""
    for line in lines:
        if not _ANYWHERE.isdisjoint(line) or line.lstrip().startswith(_LINE_START):
            return True
    return False


def may_await(cell: str) -> bool:
    """Whether ``cell`` could await at the top level (and need the coroutine runner)."""
    return "await" in cell or "async" in cell


def install(shell: Any) -> None:
    """Give ``shell`` both short cuts; IPython's own code answers every other cell."""
    manager = shell.input_transformer_manager
    full = manager.do_token_transforms

    def do_token_transforms(lines: list[str]) -> list[str]:
        return full(lines) if needs_token_transforms(lines) else lines

    manager.do_token_transforms = do_token_transforms
    should_run_async = shell.should_run_async

    def short_cut(raw_cell: str, *, transformed_cell: str | None = None,
                  preprocessing_exc_tuple: Any = None) -> bool:
        if isinstance(transformed_cell, str) and not may_await(transformed_cell):
            return False
        return should_run_async(raw_cell, transformed_cell=transformed_cell,
                                preprocessing_exc_tuple=preprocessing_exc_tuple)

    shell.should_run_async = short_cut
