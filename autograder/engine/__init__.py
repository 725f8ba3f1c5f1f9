"""The trusted grading engine: student code in a sandboxed child, checks in the host.

- :mod:`.wire`: messages and values on the socket between host and child (data only);
- :mod:`.budgets`: how much of the child's data the host agrees to read (defined once);
- :mod:`.jsonguard`, :mod:`.npyread`, :mod:`.hostdecode`, :mod:`.replies`: the host's
  reading of a message header, an ``.npy`` attachment, a value, a reply's fields;
- :mod:`.srepr` (with :mod:`.sreprbudget`): SymPy values rebuilt in the host by an
  allowlist reader;
- :mod:`.sandbox`: Linux namespaces, limits and the file-system view of the child;
- :mod:`.studentuser`: without namespaces, a separate unprivileged user per child (root grader);
- :mod:`.seccomp`: a filter that refuses named system calls;
- :mod:`.kernel`: the child side: IPython semantics, outputs as nbformat outputs;
- :mod:`.zygote`: the pre-warmed process the children are forked from;
- :mod:`.proxy`: the host side of one child: requests, deadlines, remote functions;
- :mod:`.hidden`: hidden-test regions parsed into check calls, nothing else accepted;
- :mod:`.manifest`: what grading needs of each source notebook, shipped in the package;
- :mod:`.pipeline`: one submission through the declared steps;
- :mod:`.gradebook`: scores written into nbgrader's ``gradebook.db``;
- :mod:`.pool`: submissions graded in parallel worker processes.

Nothing in this package's ``__init__`` may import the checks or the reference: the
zygote imports ``autograder.engine`` on its way to the sandbox.
"""
