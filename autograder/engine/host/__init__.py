"""The grader's side of the boundary: everything the host does with a child and a submission.

- the child: :mod:`.zygote_link` (the line to the zygote), :mod:`.proxy` (one child,
  requests with deadlines, remote functions), :mod:`.memcg` (memory cgroups),
  :mod:`.cpushare` (each child's fair share of the CPU);
  :mod:`.plainchild` (a plain child where the zygote cannot run: self-check only) and
  :mod:`.pythonpath` (how the grader starts Python processes: a safe import path);
- the host's strict reading of what the child sends: :mod:`.decode` (values),
  :mod:`.npyread` (arrays), :mod:`.sympy_reader` and :mod:`.sympy_budget` (SymPy text),
  :mod:`.replies` (a reply's fields), :mod:`.loopback` (the same crossing in-process);
- the submission: :mod:`.files` (the notebook finder and bounded read),
  :mod:`.screening` (reading it, its timestamp, the review scan with :mod:`.integrity`),
  :mod:`.hidden` (THE grammar of a cell's markers and hidden tests), :mod:`.manifest`;
- the declared pipeline: :mod:`.pipeline` (the steps in order), :mod:`.job`,
  :mod:`.prepare`, :mod:`.execute`, :mod:`.stop`;
- what comes out: :mod:`.outputs`, :mod:`.sanitize`, :mod:`.feedback_page` (the
  student's page), :mod:`.graded_record` (what the page needs, kept in the autograded
  notebook), :mod:`.gradebook` (nbgrader's ``gradebook.db``) and :mod:`.hand_grades`
  (the instructor's scores and comments read back from it), :mod:`.pool` (the batch on
  worker processes).

Imports: :mod:`autograder.engine.protocol`, :mod:`autograder.engine.child` (pure
helpers only), :mod:`autograder.bank.runner` (the one entry into the checks),
:mod:`autograder.errors` and :mod:`autograder.settings`; never the bank's registry or
checks, grading, authoring, integrations or samples.
"""
