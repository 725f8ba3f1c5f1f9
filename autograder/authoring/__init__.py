"""Writing the course: the cells, the core/extension parts, the course folder and the build.

- :mod:`.cells`: nbgrader cells as the "Create Assignment" toolbar makes them, and the
  check that a notebook's markers follow the one grammar;
- :mod:`.parts`: the core (必做) and the 拓展 extensions, graded, practice or omitted;
- :mod:`.course`: course folders and the real nbgrader commands run in them;
- :mod:`.build`: ``autograder build`` (and ``--check``), with :mod:`.views` (the answer
  key, the self-practice edition) and :mod:`.manifests` (what grading needs, shipped).

Imports: :mod:`autograder.engine.host` (the marker grammar, the manifest format),
:mod:`autograder.bank` (the checks' titles), :mod:`autograder.errors` and
:mod:`autograder.settings`; never grading, integrations or samples.
"""
