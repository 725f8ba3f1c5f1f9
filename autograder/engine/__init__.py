"""The trusted grading engine: student code in a sandboxed child, checks in the host.

Three layers, one folder each, so the trust boundary is visible in the tree:

- :mod:`.protocol`: what crosses the boundary, and nothing else: the wire's framing and
  value codec, the budgets the host reads within, the student's faults, test functions,
  the call deadline, the limits a child is spawned with, the child's SymPy writer;
- :mod:`.child`: the zygote, the sandbox (namespaces, seccomp, a separate user) and the
  child's runtime, which runs cells with IPython semantics and answers requests;
- :mod:`.host`: the grader's side: the zygote link and the child's proxy, the host's
  strict decoding of what the child sends, the hidden-test grammar and manifests, the
  declared pipeline, outputs and the feedback page, the gradebook, the worker pool.

Imports: nothing here (this ``__init__`` imports nothing: the zygote imports the package
on its way into the sandbox). ``protocol`` imports only itself and
:mod:`autograder.errors`/:mod:`autograder.settings`; ``child`` also ``protocol``; ``host``
also ``child`` (pure helpers: seccomp's support check, the SymPy warm-up, the student
user's file checks) and :mod:`autograder.bank.runner`, never the rest of the package.
"""
