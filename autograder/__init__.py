"""attention-autograder: autograded nbgrader assignments for lecture 9 (自注意力).

``autograder.reference`` holds the reference attention (NumPy and exact SymPy),
``autograder.bank`` the checks that hidden tests call, and ``autograder.cli`` the
``autograder`` command.
"""

__version__ = "0.1.0"
