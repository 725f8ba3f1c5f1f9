"""What the zygote does once so that every child it forks starts warm.

A fork inherits its parent's memory: modules SymPy and matplotlib import lazily on first
use, SymPy's caches and lazily built tables, matplotlib's fonts, glyphs and mathtext
parser. Paying for them once here instead of in every child is most of what separates
a warm child from a fresh Jupyter kernel (measured on the sample class: a solution's
first ``sp.solve``/``sp.simplify`` cell 0.17 s cold, 0.035 s after this warm-up).

Everything here is generic: unrelated symbols, made-up data, no code of the course's
(the zygote holds nothing of the checks, the reference or the solutions).
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["warm_up", "warm_sympy"]


def warm_up(shell: Any) -> None:
    """Exercise the code paths students' plots, SymPy answers and displays use."""
    _figures()
    warm_sympy()
    _displays(shell)
    _numpy()


def _figures() -> None:
    """Line, log and heat-map plots with mathtext labels, legends and each layout engine."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .mathcache import warm_log_ticks

    fig, axd = plt.subplot_mosaic([["a", "b", "c"], ["d", "b", "c"]], figsize=(8, 4),
                                  layout="constrained")
    image = axd["a"].imshow(np.eye(3), vmin=0, vmax=1, cmap="viridis")
    for i in range(2):
        axd["a"].text(i, i, f"{0.5:.2f}", ha="center", va="center", color="w", fontsize=8)
    axd["a"].set_xticks(range(3), ["x (pos 0)", "y", "z"])
    axd["a"].set_title(r"$W_v = 2I$, $\sqrt{d_k}$, $\mathrm{std}(q\cdot k)$")
    axd["b"].loglog([1, 10, 100], [1, 3, 10], "o-", label=r"$\propto n^2$")
    axd["b"].loglog([1, 10, 100], [2, 5, 20], "s--", label=r"$\|\partial L/\partial z\|$")
    axd["b"].legend(fontsize=8)
    axd["b"].set_xlabel("$d_k$")
    axd["c"].semilogx([1, 10, 100], [0.1, 0.5, 0.9], "o-", label="mean")
    axd["c"].axhline(0.5, color="gray", ls=":", label=r"uniform $\ln 10$")
    axd["c"].legend(fontsize=8)
    axd["d"].plot(np.linspace(-8, 8, 50), np.tanh(np.linspace(-8, 8, 50)))
    axd["d"].bar([0, 1], [1, 2])
    fig.colorbar(image, ax=axd["a"], label="weight")
    fig.savefig(io.BytesIO(), format="png")
    warm_log_ticks(fig, axd["b"])
    plt.close(fig)
    fig, ax = plt.subplots(1, 2, figsize=(6, 3))
    ax[0].semilogy([1, 2, 3], [1, 10, 100])
    fig.tight_layout()
    fig.savefig(io.BytesIO(), format="png", bbox_inches="tight")
    plt.close(fig)


def warm_sympy() -> None:
    """SymPy's lazily loaded machinery: simplify, solve, subs, matrices, high-precision
    evaluation, lambdify; the host's checks use it too (:func:`.pool.grade_tasks`)."""
    import sympy as sp

    a, b = sp.symbols("alpha beta", positive=True)
    u, v, w = sp.symbols("u v w")
    m = sp.Matrix(2, 2, sp.symbols("m0:4"))
    row = sp.Matrix([[u, v]])
    score = (row * m * (row * m).T)[0, 0] / sp.sqrt(3)
    sp.simplify(sp.exp(score) / sp.exp(score) * row - row)
    weight = sp.exp(u) / (sp.exp(u) + sp.exp(v))
    sp.simplify(weight.subs(u, v + w))
    sp.simplify(sp.Matrix([[weight, 1 - weight]]) * m)
    sp.solve(sp.Eq(3 * a**2 * b, 5 * a * b**2), a)
    cost = 7 * a * b**2 + a**2 * b
    sp.simplify(cost.subs(a, 9) / cost.subs(a, 2))
    sp.nsimplify(0.5), sp.Rational(3, 4) * sp.sqrt(2), sp.log(a).diff(a), sp.limit(1 / a, a, sp.oo)
    sp.lambdify(b, b**2 / (b + 1), "numpy")(2.0)
    exact = sp.Matrix([[sp.Rational(1, 3), 2], [sp.Rational(-1, 2), 1]])
    exact = (exact * exact.T).applyfunc(sp.exp) / sp.sqrt(5)
    complex(sp.N(exact[0, 0] - exact[1, 1] / (1 + exact[0, 1]), 40)), exact.evalf(20)


def _displays(shell: Any) -> None:
    import sympy as sp

    u, b = sp.Symbol("u"), sp.Symbol("beta", positive=True)
    shell.display_formatter.format(sp.Matrix([[u * sp.exp(1 / sp.sqrt(2))]]))
    shell.display_formatter.format(sp.exp(u) / (1 + sp.sqrt(b)))


def _numpy() -> None:
    """First calls that load NumPy's submodules (linear algebra, random, polynomial fits)."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    np.linalg.lstsq(np.c_[np.ones(4), x[:, 0]], x[:, 1], rcond=None)
    np.polyfit(np.log([1.0, 2.0, 4.0]), np.log([1.0, 4.1, 15.9]), 1)
    np.einsum("ij,kj->ik", x, x)
    np.linalg.norm(x, axis=1), np.cov(x.T), np.argsort(x, axis=0), np.std(x, ddof=1)
    np.set_printoptions(**np.get_printoptions())
