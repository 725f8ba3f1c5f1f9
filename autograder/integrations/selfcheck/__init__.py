"""The student's own ``autograder check NOTEBOOK``: the grader's checks on practice inputs.

- :mod:`.check`: the notebook through the same pipeline as ``autograder grade``
  (sandboxed child, checks in this process), nothing written anywhere;
- :mod:`.daemon`: a warm background process per user that answers the next checks;
- :mod:`.command`: the daemon's answer when one runs, else the check here.

Imports: the engine's host side, the bank's registry (to load the checks while the
zygote starts), :mod:`autograder.errors` and :mod:`autograder.settings`.
"""
