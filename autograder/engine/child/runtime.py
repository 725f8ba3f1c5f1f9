"""The child's side: run cells with IPython semantics and answer the host's requests.

Outputs are recorded as nbformat outputs (``stream``, ``display_data``,
``execute_result``, ``error``), as a Jupyter kernel would produce them: magics,
``display``, rich reprs, inline matplotlib figures as PNG, tracebacks. Requests
(all answered on one socket, each echoing its ``id``):

- ``files``: write the submission's data files into the home folder;
- ``run``: run one cell's code, answer its outputs (within the host's ``output_bytes``,
  when given: the host reads no larger answer) and whether it raised;
- ``get``: one variable of the user namespace, as data (a function becomes a handle);
- ``call``: call a handle with arguments, answer the result or the exception raised;
- ``bye``: exit.

This module is imported by the zygote before the sandbox closes; it must not import
anything of the grader (checks, reference, solutions).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..protocol import codec, wire
from . import cellpaths, mathcache

__all__ = ["Kernel", "prepare", "serve"]

#: Characters of stream output kept per cell, bytes of rich display data per cell.
MAX_STREAM = 1_000_000
MAX_DISPLAY = 16 << 20
TRUNCATED = "\n…（输出过长，已截断）\n"


class Recorder:
    """The outputs of the cell being run, with their size bounded."""

    def __init__(self) -> None:
        self.outputs: list[dict] = []
        self.stream_chars = 0
        self.display_bytes = 0
        self.failed = False

    def stream(self, name: str, text: str) -> None:
        if not isinstance(text, str) or not text:
            return
        room = MAX_STREAM - self.stream_chars
        if room <= 0:
            return
        if len(text) > room:
            text = text[:room] + TRUNCATED
        self.stream_chars += len(text)
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def rich(self, kind: str, data: dict, metadata: dict | None, count: int | None = None) -> None:
        clean = _mime_bundle(data)
        size = sum(len(v) for v in clean.values())
        if not clean or self.display_bytes + size > MAX_DISPLAY:
            return
        self.display_bytes += size
        out = {"output_type": kind, "data": clean, "metadata": _json_safe(metadata or {})}
        if kind == "execute_result":
            out["execution_count"] = count
        self.outputs.append(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self.failed = True
        self.outputs.append({"output_type": "error", "ename": ename, "evalue": evalue,
                             "traceback": [str(line)[:20_000] for line in traceback[:200]]})


def _mime_bundle(data: dict) -> dict[str, str]:
    clean = {}
    for mime, value in (data or {}).items():
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        elif not isinstance(value, str):
            try:
                value = json.dumps(value)
            except (TypeError, ValueError):
                continue
        clean[str(mime)] = value
    return clean


def _json_safe(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return {}


class _Stream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of the child: writes become stream outputs."""

    def __init__(self, kernel: Kernel, name: str) -> None:
        self.kernel, self.name = kernel, name

    def write(self, text: str) -> int:
        self.kernel.recorder.stream(self.name, text)
        return len(text)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


def _safe_str(value: Any) -> str:
    try:
        return str(value)[:10_000]
    except Exception:  # a student's __str__ that raises
        return f"<{type(value).__name__}>"


class Kernel:
    """An IPython shell whose outputs go to a :class:`Recorder` instead of a terminal."""

    def __init__(self) -> None:
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        kernel = self
        self.recorder = Recorder()

        class Publisher(DisplayPublisher):
            def publish(self, data, metadata=None, source=None, *, transient=None,
                        update=False, **kwargs):
                kernel.recorder.rich("display_data", data, metadata)

            def clear_output(self, wait=False):
                kernel.recorder.outputs.clear()

        class Hook(DisplayHook):
            def start_displayhook(self):
                pass

            def write_output_prompt(self):
                pass

            def write_format_data(self, format_dict, md_dict=None):
                kernel.recorder.rich("execute_result", format_dict, md_dict,
                                     count=self.shell.execution_count)

            def finish_displayhook(self):
                pass

        class Shell(InteractiveShell):
            def enable_gui(self, gui=None):  # figures are inline; there is no event loop
                pass

            def _showtraceback(self, etype, evalue, stb):
                kernel.recorder.error(getattr(etype, "__name__", "Error"), _safe_str(evalue),
                                      list(stb))

        config = Config()
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "Linux"
        config.InteractiveShell.autoindent = False
        # plain tracebacks still show each frame's line, at a fiftieth of the cost of
        # IPython's default context mode (which a blank notebook pays once per cell)
        config.InteractiveShell.xmode = "Plain"
        self.shell = Shell.instance(config=config, display_pub_class=Publisher,
                                    displayhook_class=Hook)
        cellpaths.install(self.shell)
        self.handles = codec.HandleTable()

    # -------------------------------------------------------------- cells

    @contextlib.contextmanager
    def _capture(self):
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved

    def run(self, code: str) -> tuple[bool, list[dict]]:
        """Run one cell: (raised nothing, its outputs)."""
        self.recorder = Recorder()
        with self._capture():
            try:
                result = self.shell.run_cell(code, store_history=True)
                ok = bool(result.success)
            except BaseException as err:  # SystemExit, KeyboardInterrupt outside the cell
                self.recorder.error(type(err).__name__, _safe_str(err), [])
                ok = False
        return ok and not self.recorder.failed, self.recorder.outputs

    # -------------------------------------------------------------- values

    def get(self, name: str, blobs: list[bytes]) -> dict:
        ns = self.shell.user_ns
        if not isinstance(name, str) or name not in ns:
            return {"missing": True}
        return {"value": codec.encode_for_host(ns[name], blobs, self.handles)}

    def call(self, header: dict, blobs_in: list[bytes], blobs: list[bytes]) -> dict:
        try:
            func = self.handles.get(header.get("handle"))
            args = codec.decode_from_host(header.get("args", []), blobs_in)
            kwargs = codec.decode_from_host(header.get("kwargs", {}), blobs_in)
        except Exception as err:  # the host's own request is broken
            return {"bad_request": f"{type(err).__name__}: {err}"}
        self.recorder = Recorder()  # a call's prints and warnings are not shown
        try:
            with self._capture():
                value = func(*args, **dict(kwargs))
        except KeyboardInterrupt:
            return {"interrupted": True}
        except BaseException as err:  # the student's function raised (SystemExit too)
            return {"raised": _describe(err)}
        return {"value": codec.encode_for_host(value, blobs, self.handles)}


def _describe(err: BaseException) -> dict:
    try:
        names = [c.__name__ for c in type(err).__mro__][:20]
    except Exception:  # a hostile metaclass
        names = ["BaseException"]
    return {"type": names[0][:80], "bases": [n[:80] for n in names], "message": _safe_str(err)[:2000]}


def prepare(*, figures: bool = True, warm: bool = True) -> Kernel:
    """Build the shell; with ``warm``, draw once so forks start with matplotlib and SymPy
    warm. Without ``figures``, figures are closed at the end of each cell unrendered
    (``autograder check`` needs verdicts, not pictures)."""
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    mathcache.install()
    kernel = Kernel()
    kernel.shell.enable_matplotlib("inline")
    # a tight bounding box costs a whole extra draw of every figure; the notebooks lay
    # their figures out themselves (constrained or tight layout)
    kernel.shell.run_line_magic("config", "InlineBackend.print_figure_kwargs = {'bbox_inches': None}")
    _skip_placeholder_draw(kernel.shell.display_formatter.formatters["image/png"])
    if not figures:
        kernel.shell.display_formatter.formatters["image/png"].enabled = False
        _skip_layout()
    if warm:
        _warm_up(kernel)
    return kernel


def _skip_layout() -> None:
    """Without figures, ``fig.tight_layout()`` only measures text nobody will see: skip it
    (0.1 s of q2's figure cell in ``autograder check``)."""
    from matplotlib.figure import Figure

    Figure.tight_layout = lambda self, *args, **kwargs: None


def _skip_placeholder_draw(png: Any) -> None:
    """Print figures without the extra draw a finished ``tight_layout()`` would cost.

    After ``fig.tight_layout()`` a figure keeps a placeholder layout engine that lays out
    nothing, yet matplotlib draws the whole figure once more before printing it because
    an engine is set (0.05 s of q2's 0.4 s figure). The pixels are the same without it.
    """
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    print_png = png.lookup_by_type(Figure)

    def render(fig: Figure) -> Any:
        engine = fig.get_layout_engine()
        if not isinstance(engine, PlaceHolderLayoutEngine):
            return print_png(fig)
        fig.set_layout_engine(None)
        try:
            return print_png(fig)
        finally:
            fig.set_layout_engine(engine)

    png.for_type(Figure, render)


def _warm_up(kernel: Kernel) -> None:
    """Warm the libraries (:mod:`.warmup`), then the shell's own display and traceback paths."""
    import numpy as np

    from .warmup import warm_up

    warm_up(kernel.shell)
    kernel.shell.display_formatter.format(np.eye(2))
    import IPython.core.logger  # noqa: F401  (every cell asks for the shell's logger)
    with kernel._capture():  # a traceback's first rendering loads its formatting machinery
        try:
            raise ValueError("warm-up")
        except ValueError:
            kernel.shell.showtraceback()
    kernel.recorder = Recorder()


def serve(sock, kernel: Kernel) -> None:
    """Answer the host's requests until ``bye`` or until the host goes away."""
    while True:
        try:
            header, blobs_in = wire.recv(sock)
        except wire.WireError:
            return
        op, blobs = header.get("op"), []
        if op == "run":
            ok, outputs = kernel.run(str(header.get("code", "")))
            outputs, cut = within(outputs, header.get("output_bytes"))
            reply = {"ok": ok, "outputs": outputs, "count": kernel.shell.execution_count - 1,
                     "cut": cut}
        elif op == "get":
            reply = kernel.get(header.get("name"), blobs)
        elif op == "call":
            reply = kernel.call(header, blobs_in, blobs)
        elif op == "files":
            reply = _write_files(header.get("names", []), blobs_in)
        elif op == "bye":
            return
        else:
            reply = {"bad_request": f"unknown op {op!r}"}
        reply["id"] = header.get("id")
        try:
            wire.send(sock, reply, blobs)
        except OSError:
            return


def within(outputs: list[dict], room: object) -> tuple[list[dict], bool]:
    """The first outputs that fit in ``room`` bytes of UTF-8 JSON (as the host counts
    them, with a little to spare for the fields it adds), and whether any were left out."""
    if not isinstance(room, int) or isinstance(room, bool):
        return outputs, False
    kept, used = [], 0
    for out in outputs:
        try:
            used += len(json.dumps(out, ensure_ascii=False).encode("utf-8")) + 256
        except (TypeError, ValueError):
            continue
        if used > room:
            return kept, True
        kept.append(out)
    return kept, False


def _write_files(names: list, blobs: list[bytes]) -> dict:
    """The submission's data files, next to where the notebook's code runs."""
    for name, blob in zip(names, blobs):
        path = Path(os.getcwd()) / str(name)
        if ".." in Path(str(name)).parts or Path(str(name)).is_absolute():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
    return {"ok": True}
