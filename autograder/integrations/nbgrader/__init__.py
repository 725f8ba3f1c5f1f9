"""Grading where nbgrader keeps its results: a course's ``submitted/`` folder graded by the
engine (:mod:`.grade`: ``autograded/``, ``gradebook.db``, ``scores.csv``, feedback pages),
the pages again after hand grading, where ``nbgrader release_feedback`` finds them
(:mod:`.feedback`: ``autograder feedback COURSE``), and the nbconvert preprocessors
``nbgrader_config.py`` installs for nbgrader's own pages (:mod:`.preprocessors`: hidden
tests hidden, nothing a browser would run).

Imports: the engine's host side, grading, :mod:`autograder.errors` and
:mod:`autograder.settings`.
"""
