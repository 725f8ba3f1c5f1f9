"""The child's side of the boundary: the zygote, the sandbox and the runtime student code runs in.

- :mod:`.zygote`: the pre-warmed process every child is forked from
  (``python -m autograder.engine.child.zygote``);
- :mod:`.runtime`: the child's runtime: cells run with IPython semantics, outputs kept as
  nbformat outputs, the host's requests answered (it is not a Jupyter kernel);
- :mod:`.sandbox`: Linux namespaces, a read-only view of the system, limits, no privileges;
- :mod:`.seccomp`: a filter that refuses named system calls;
- :mod:`.studentuser`: without namespaces, a separate unprivileged user per child;
- :mod:`.warmup`: what the zygote does once so every fork starts warm;
- :mod:`.plain`: the runtime in a plain process, for a student's own check where the
  zygote cannot run (macOS, Windows): no sandbox, nothing Linux-only imported.

Everything here is loaded by the zygote before the sandbox closes, so it must hold
nothing of the grader (no checks, reference, salt or course). Imports: only itself,
:mod:`autograder.engine.protocol`, :mod:`autograder.errors` and :mod:`autograder.settings`.
seccomp, studentuser and warmup are here because the child needs them; the host also
calls a few of their pure functions (whether seccomp works here, whether a student user
could read a path, the SymPy warm-up of its own checks).
"""
