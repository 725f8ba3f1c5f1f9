"""pytest puts this folder first on sys.path, so a checkout's own ``autograder`` is the
one tested, whichever checkout the virtual environment was installed from."""

import sys

# as in autograder/cli.py: nbformat's IRI format checker costs 3 s to import, unused
sys.modules.setdefault("rfc3987_syntax", None)
