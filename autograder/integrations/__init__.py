"""One folder per row of the README's "Where do you grade?" table.

- :mod:`.nbgrader`: ``autograder grade`` into an nbgrader course (``autograded/``,
  ``gradebook.db``) and the preprocessors ``nbgrader_config.py`` installs;
- :mod:`.gradescope`: the autograder bundle (``autograder gradescope``) and what runs
  inside Gradescope;
- :mod:`.lms`: a Canvas or Moodle download in (the intake first, then the nbgrader
  grading), a gradebook CSV out (``autograder export``);
- :mod:`.selfcheck`: ``autograder check`` on a student's own machine, and its warm daemon.

Imports: anything below them (the engine, bank, grading, authoring, errors, settings);
one integration may use another's steps (the LMS intake grades through nbgrader's),
never the samples or the CLI.
"""
