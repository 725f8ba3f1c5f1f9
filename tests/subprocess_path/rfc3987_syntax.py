"""Stands in for the ``rfc3987_syntax`` package in the suite's subprocesses (``nbgrader``
commands, on ``PYTHONPATH`` by ``conftest.py``): jsonschema, under nbformat, builds its
IRI format checker from that package when it can import it, 0.8 s of every process's
start, and nothing here validates an IRI. ``autograder/cli.py`` skips it the same way."""

raise ImportError("rfc3987_syntax is left out of the test suite's subprocesses")
