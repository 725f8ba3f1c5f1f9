"""Grading where nbgrader keeps its results: a course's ``submitted/`` folder graded by the
engine (:mod:`.grade`: ``autograded/``, ``gradebook.db``, ``scores.csv``, feedback pages),
the pages again after hand grading, where ``nbgrader release_feedback`` finds them
(:mod:`.feedback`: ``autograder feedback COURSE``), and the nbconvert preprocessors
``nbgrader_config.py`` installs for nbgrader's own commands (:mod:`.preprocessors`: the
release ``generate_assignment`` makes is the package's, hidden tests hidden, nothing a
browser would run).

Imports: the engine's host side, grading, authoring (the release a source notebook
makes), :mod:`autograder.errors` and :mod:`autograder.settings`.
"""
