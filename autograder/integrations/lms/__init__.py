"""Grading a Canvas or Moodle class: the download in, the gradebook CSV out.

- :mod:`.intake`: the download laid out as nbgrader's ``submitted/`` (the LMS's own ids,
  nothing resolved silently), then graded by :mod:`autograder.integrations.nbgrader`;
  :mod:`.unzip` reads the zip safely, :mod:`.names` the LMS's file names;
- :mod:`.export`: ``autograder export``: the totals in the LMS's import format.

Imports: the nbgrader integration, the engine's host side (the notebook finder),
grading (the intake's remarks), :mod:`autograder.errors` and :mod:`autograder.settings`.
"""
