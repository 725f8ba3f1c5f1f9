"""The boundary without the process, for tests that grade in-process values.

:func:`evaluate_across` runs a check as the engine would on values the sandboxed child
sent: every value crosses the wire format first (:func:`autograder.engine.host.loopback.crossing`:
data only, functions as handles, what the host refuses becomes the student's failure).
The bank's unit tests get it for every check they run (``tests/bank/conftest.py``); any
other test that wants it calls it by name.
"""

from __future__ import annotations

from autograder.bank import runner
from autograder.engine.host.loopback import crossing
from autograder.engine.protocol.faults import StudentFault

_EVALUATE = runner.evaluate


def evaluate_across(name: str, values: dict, **kwargs) -> runner.Outcome:
    """``runner.evaluate`` on ``values`` as they would arrive from the child."""
    try:
        crossed = {k: crossing(v) for k, v in values.items()}
    except StudentFault as err:  # refused by the host's reader, as the engine would
        return runner.Outcome.failed(name, str(err))
    return _EVALUATE(name, crossed, **kwargs)
