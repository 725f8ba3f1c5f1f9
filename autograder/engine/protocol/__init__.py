"""What crosses the boundary between the grader (host) and the sandboxed child.

- :mod:`.wire`: one message on the socket (a JSON header and ``.npy`` blobs), read within
  a budget and a deadline; :mod:`.jsonguard` measures a header before it is parsed;
- :mod:`.codec`: values as tagged JSON, both ways (the child's encoder never raises);
- :mod:`.budgets`: how much of the child's data the host agrees to read, defined once;
- :mod:`.faults`: the student's side going wrong, as typed exceptions;
- :mod:`.testfn`: functions a check hands to student code, as source and data;
- :mod:`.deadline`: the host's own time limit and the deadline of calls into the child;
- :mod:`.limits`: what a child is spawned with, and what the zygote reports;
- :mod:`.sympy_writer`: the child's ``srepr`` writer (the host reads with
  :mod:`autograder.engine.host.sympy_reader`).

Both sides import this package, so it holds nothing of the grader. Imports: only itself,
:mod:`autograder.errors` and :mod:`autograder.settings`.
"""
