"""What the checks are built from: comparisons, SymPy equivalence, the reference, misconceptions.

- :mod:`.compare`: numpy.testing-like assertions with Chinese messages (kind, shape,
  finiteness, values, tolerance);
- :mod:`.symbolic`: SymPy answers: kind, exactness, symbols by name, equivalence;
- :mod:`.reference`: the reference attention (NumPy and exact SymPy);
- :mod:`.misconceptions`: the named misconceptions and what each one computes.

Imports: only itself and :mod:`autograder.engine.protocol` (the host's time limit, the
opaque marker of a value that is not data); never the rest of the bank.
"""
