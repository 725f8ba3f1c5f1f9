"""Grading on Gradescope: the bundle an instructor uploads, and what runs inside it.

- :mod:`.bundle`: ``autograder gradescope ASSIGNMENT``: ``setup.sh``, ``run_autograder``,
  the limits, a secret salt and :mod:`.wheel`'s wheel and pinned requirements;
- :mod:`.run`: ``python -m autograder.integrations.gradescope.run``: the one submission
  graded into ``results.json``, refusing to run student code unprotected.

Imports: the engine (host side, and the child's student-user checks), grading,
:mod:`autograder.errors` and :mod:`autograder.settings`.
"""
