"""attention-autograder: autograded nbgrader assignments for lecture 9 (自注意力, self-attention).

Student code runs in a sandboxed child process forked from a warm "zygote"; every check,
seed and score stays in the grader (the host), and only data crosses between them. The
tree shows that boundary and the places the grader runs:

- :mod:`.errors` (every error a user can act on) and :mod:`.settings` (every default,
  limit and choice list, once) at the top, imported by everyone;
- :mod:`.engine`: :mod:`.engine.protocol` (what crosses the boundary),
  :mod:`.engine.child` (the sandbox and the child's runtime), :mod:`.engine.host` (the
  grader's side: the child's proxy, the declared pipeline, the worker pool, pages);
- :mod:`.bank`: the checks, entered only through :mod:`.bank.runner`;
- :mod:`.grading`: a batch of submissions into one row each, wherever it runs;
- :mod:`.authoring`: the course, the cells, ``autograder build``;
- :mod:`.integrations`: one folder per place to grade (nbgrader, Gradescope, an LMS,
  the student's own ``autograder check``);
- :mod:`.samples`: the sample students and the demo; :mod:`.cli`: the command
  (:mod:`.cli_report`: its ``report`` part).

Imports: layers import downwards only, and ``tests/test_layering.py`` derives the graph
from the source and fails on any cycle or crossing. The protocol imports nothing of the
package but :mod:`.errors` and :mod:`.settings`; the child imports only the protocol (and
those two), so the zygote never loads the grader; the host enters the bank only through
:mod:`.bank.runner` and never imports grading, authoring, integrations or samples; the
bank sees the child only through the protocol (its call deadline and the student's
faults); grading imports the engine's host side and the protocol; nothing imports the CLI.
"""

__version__ = "0.1.0"


def check(notebook, assignment=None) -> None:
    """``import autograder; autograder.check("q1_value_scaling.ipynb")``: the check cell's
    report for a notebook file, from any cell (Colab, Kaggle: an uploaded copy)."""
    from .integrations.selfcheck.incell import check as check_file

    check_file(notebook, assignment)
