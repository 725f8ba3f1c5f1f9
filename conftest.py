"""pytest puts this folder first on sys.path, so a checkout's own ``autograder`` is the
one tested, whichever checkout the virtual environment was installed from."""

import os
import sys
from pathlib import Path

# as in autograder/cli.py: nbformat's IRI format checker costs 3 s to import, unused
sys.modules.setdefault("rfc3987_syntax", None)
# the same in the suite's subprocesses that keep PYTHONPATH (nbgrader's commands), and
# one BLAS thread here and in them (as the engine's children have), so a figure computed
# in-process (tests/prose_q*.py) is the same whatever the machine's thread count; set
# before numpy is imported, and inherited by pytest-xdist's workers
_STUB = str(Path(__file__).resolve().parent / "tests" / "subprocess_path")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in dict.fromkeys([_STUB, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]) if p)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
