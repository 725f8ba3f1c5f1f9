"""pytest puts this folder first on sys.path, so a checkout's own ``autograder`` is the
one tested, whichever checkout the virtual environment was installed from."""
