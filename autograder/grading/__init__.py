"""The batch, independent of where it runs: submissions in, one scores-table row each out.

- :mod:`.batch`: :func:`~.batch.grade_submissions` and the :class:`~.batch.Result` row;
- :mod:`.guard`: per-submission steps of the parent that may fail without stopping the
  batch, and the intake's remarks;
- :mod:`.scores`: ``scores.csv`` and ``scores.json``;
- :mod:`.salt`: the course's secret salt;
- the class report (``autograder report``): :mod:`.report_rows` (``scores.json`` and the
  due dates, read strictly), :mod:`.report_stats` (the numbers), :mod:`.report_charts`
  (matplotlib histograms) and :mod:`.report` (the one offline page).

Imports: :mod:`autograder.engine.host` (the worker pool, manifests), the protocol,
:mod:`autograder.errors` and :mod:`autograder.settings`; never an integration.
"""
