"""nbgrader configuration for the lecture 9 (自注意力) course.

nbgrader reads this file from the working directory only; the ``autograder``
commands run nbgrader from the course root (or copy this file into the temporary
courses they build), so every command works from any folder of the repository.
"""

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades

from autograder.integrations.nbgrader.preprocessors import (
    BrowserSafe,
    HideHiddenTests,
    generate_assignment_preprocessors,
    markdown2html,
)
from autograder.settings import DEFAULT_EXTENSIONS, DEFAULTS

c = get_config()  # noqa: F821 - injected by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "llm-lecture9-self-attention"
c.CourseDirectory.assignment_id = ""

# The 拓展 (extension) sections of every notebook: "practice" (in the release, checked by
# `autograder check` and reported in the feedback, never scored; the default), "graded"
# (scored, reported apart from the core) or "omit" (left out). Run `autograder build` after
# changing it; `autograder build --extensions MODE` overrides it for one build.
c.Autograder.extensions = DEFAULT_EXTENSIONS

# Grade even where student code would run as your own user (no user namespaces, not
# root)? Refused by default (docs/security.md); `autograder grade --unprotected` allows it once.
c.Autograder.allow_unprotected = DEFAULTS.allow_unprotected

# `nbgrader generate_assignment` (and formgrader's Generate button) makes the release
# `autograder build` makes: a first step (AutograderRelease) applies the setting above and
# adds the 作答说明 cell and the self-check cell, then nbgrader's own steps run.
c.GenerateAssignment.preprocessors = generate_assignment_preprocessors()

# Students see Chinese stubs where the solutions were.
c.ClearSolutions.code_stub = {"python": "# 在这里写你的代码\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "在这里写下你的回答。"

# A looping cell is stopped after this many seconds, as `autograder grade` stops it.
c.Execute.timeout = int(DEFAULTS.cell_timeout)
c.Execute.interrupt_on_timeout = True

# A correct answer may print a harmless warning; nbgrader would score a test cell
# that writes to stderr as 0, so warnings are dropped before scoring.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(Warning|WARNING|warn)"

# Students who delete or rename a test cell get it back.
c.OverwriteCells.add_missing_cells = True

# Feedback must not show the hidden tests.
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTests, CSSHTMLHeaderPreprocessor]

# Nothing a student wrote runs in the browser of whoever opens a rendered notebook: the
# instructor in formgrader (with the token of a server that can read and write the whole
# course), the student in nbgrader's own feedback. Every HTML page nbgrader renders keeps
# safe outputs only (BrowserSafe runs before GenerateFeedback's own preprocessors),
# leaves out nbconvert's scripts for JavaScript and widget outputs, and sanitises
# Markdown (written answers) with nh3.
c.HTMLExporter.preprocessors = [BrowserSafe]
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {"markdown2html": markdown2html}
