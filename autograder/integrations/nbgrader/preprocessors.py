"""nbgrader preprocessors and filters (the course's ``nbgrader_config.py`` installs them).

``nbgrader generate_assignment`` makes the release ``autograder build`` makes: its first
step, :class:`AutograderRelease` (:func:`generate_assignment_preprocessors`), hands
nbgrader's own steps the notebook as the package releases it, so the 作答说明 and the
check cell are in the release and the gradebook gets the cells the package grades,
whatever the extension setting (``c.Autograder.extensions``).

nbgrader's feedback shows every cell as it was run, hidden tests included: that
would hand students the hidden checks. :class:`HideHiddenTests` replaces each
hidden region by a one-line note before the HTML is written; the outputs, which hold
the Chinese diagnosis, stay.

formgrader (the instructor's grading page, opened with the instructor's token) and
``generate_feedback`` render a submission through nbconvert, which copies a notebook's
HTML and JavaScript outputs and a Markdown cell's raw HTML into the page as they are
(formgrader's own template ignores nbconvert's ``sanitize_html`` for Markdown cells).
:class:`BrowserSafe` keeps only the output types :mod:`.engine.outputs` keeps and the
cell metadata nbgrader needs; :func:`markdown2html` replaces nbconvert's filter of that
name with one whose HTML goes through :func:`.engine.sanitize.safe_html`.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from ...authoring.parts import check_mode
from ...authoring.views import student_edition
from ...engine.host.hidden import HIDDEN_BEGIN, shown
from ...engine.host.outputs import clean_outputs
from ...engine.host.sanitize import safe_html
from ...settings import DEFAULT_EXTENSIONS

__all__ = ["AutograderRelease", "generate_assignment_preprocessors", "HideHiddenTests",
           "BrowserSafe", "markdown2html"]


class AutograderRelease(Preprocessor):
    """``generate_assignment``'s first step: the source notebook as the package releases
    it (:func:`autograder.authoring.views.student_edition`), its 拓展 sections as
    ``c.Autograder.extensions`` says. nbgrader's own steps then lock, clear and save it."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):  # noqa: D401 - nbconvert's signature
        assignment = resources["nbgrader"]["assignment"]
        return student_edition(nb, assignment, self.extension_mode()), resources

    def extension_mode(self) -> str:
        """The course's setting, read from the configuration nbgrader loaded (the same
        ``nbgrader_config.py`` that ``autograder build`` reads)."""
        section = self.config.get("Autograder") or {}
        return check_mode(str(section.get("extensions", DEFAULT_EXTENSIONS)))


def generate_assignment_preprocessors() -> list[type]:
    """For ``c.GenerateAssignment.preprocessors``: :class:`AutograderRelease`, then
    nbgrader's own steps, as this version of nbgrader declares them."""
    from nbgrader.converters import GenerateAssignment

    return [AutograderRelease, *GenerateAssignment.class_traits()["preprocessors"].default()]


class HideHiddenTests(Preprocessor):
    """Replace ``### BEGIN/END HIDDEN TESTS`` regions with a short note."""

    # nbconvert preprocessors are off unless enabled; this one must always run.
    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):  # noqa: D401 - nbconvert's signature
        if cell.cell_type == "code" and HIDDEN_BEGIN in cell.source:
            cell.source = shown(cell.source)
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = _short_traceback(output)
        return cell, resources


def _short_traceback(output: dict) -> list[str]:
    """Only the error line, for every error alike: IPython's frames quote the cell's code,
    hidden lines included, and in nbgrader's kernel no output can tell a check's verdict
    from an exception the student named the same way (a check's failure has its whole
    explanation as its value, so nothing of it is lost)."""
    return [f"\x1b[0;31m{output.get('ename', 'Error')}\x1b[0m: {output.get('evalue', '')}"]


#: A grade id nbgrader itself would accept; formgrader writes it into the page unescaped.
_GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}\Z")
#: Cell metadata the pages need (tags are escaped by nbconvert's templates).
_CELL_METADATA = ("nbgrader", "deletable", "editable", "tags")


class BrowserSafe(Preprocessor):
    """Nothing in the notebook that a browser would run: outputs of safe types only
    (text, PNG/JPEG, LaTeX, Markdown), raw cells not rendered, no attachments, cell
    metadata limited to :data:`_CELL_METADATA` with a well-formed grade id, notebook
    metadata limited to the kernel and language (no widget state)."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):  # noqa: D401 - nbconvert's signature
        nb.metadata = NotebookNode({k: v for k, v in nb.get("metadata", {}).items()
                                    if k in ("kernelspec", "language_info")})
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):  # noqa: D401 - nbconvert's signature
        if cell.cell_type == "code":
            cell.outputs = clean_outputs(list(cell.get("outputs", [])))
        cell.pop("attachments", None)
        meta = cell.get("metadata", {})
        grader = meta.get("nbgrader")
        if grader is not None and not (isinstance(grader, dict)
                                       and _GRADE_ID.match(str(grader.get("grade_id", "")))):
            meta.pop("nbgrader")
        cell.metadata = NotebookNode({k: v for k, v in meta.items() if k in _CELL_METADATA})
        return cell, resources


def markdown2html(source: str) -> str:
    """nbconvert's Markdown rendering (math left for MathJax), then sanitised."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return safe_html(markdown2html_mistune(source))
