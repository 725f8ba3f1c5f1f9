"""A batch warms its zygote up only when enough notebooks share the warm-up
(``pool.WARM_UP_FROM``): a Gradescope run or a one-student ``autograder grade`` starts its
child about 0.7 s sooner without it, and draws the same figures."""

from __future__ import annotations

import pytest

from autograder.engine.host import pool, zygote_link
from autograder.engine.host.protection import Verdict
from autograder.engine.protocol.limits import Protection
from autograder.settings import DEFAULTS


@pytest.mark.parametrize(("notebooks", "warm"), [(1, False), (pool.WARM_UP_FROM - 1, False),
                                                 (pool.WARM_UP_FROM, True), (143, True)])
def test_the_zygote_is_warmed_up_for_a_batch_of_enough_notebooks(monkeypatch, notebooks, warm):
    started = []
    monkeypatch.setattr(zygote_link, "Zygote", lambda **options: started.append(options))
    pool.start_zygote(Verdict(Protection.NAMESPACES, "test"), notebooks=notebooks)
    assert started == [{"isolate": True, "warm": warm}]


def test_grading_tells_the_zygote_how_many_notebooks_it_serves(monkeypatch, tmp_path):
    asked = []

    def spy(verdict, *, notebooks):
        asked.append(notebooks)
        raise zygote_link.ZygoteError("stopped here by the test")

    monkeypatch.setattr(pool, "start_zygote", spy)
    tasks = [pool.Submission(f"s{i}", "q1_value_scaling", tmp_path / f"s{i}")
             for i in range(3)]
    with pytest.raises(zygote_link.ZygoteError, match="stopped here"):
        pool.grade_tasks(tasks, DEFAULTS, jobs=1, verdict=Verdict(Protection.NAMESPACES, "test"))
    assert asked == [3]
