"""The numbers q5's prose prints: given as they are, or computed from the solution.

``tests/test_prose.py`` checks that every number in the markdown cells (model answers
included) is here or allowed otherwise, and that each computed figure is what the code gives.
"""

from __future__ import annotations

from functools import cache

import nbformat
from helpers import ROOT, solution_namespace

from autograder.bank import q5_ext

#: Inputs and facts the prose uses as they are.
GIVEN: set[str] = {
    "32000", "128000",  # the two long documents of section 3 (lengths chosen, not results)
    "16384",    # the largest d the hidden check of layer_flops uses
    "0.5",      # a float coefficient is accepted: 0.5*d
    "512", "4096",  # the two model widths the notebook discusses
    "64",       # d of the timing run
    "0.1",      # loglog_slope's tolerance on noisy data
    "32",       # the example model: 32 layers, 32 heads (GPT-3 6.7B: d_model 4096, 32 layers, 32 heads)
    "6.7",      # ... the size of that model in the GPT-3 paper
    "3.5",      # GPT-3.5 (a name)
    "2022",     # FlashAttention (Dao et al., 2022)
}


@cache
def _ns():
    return solution_namespace("q5_cost_scaling")


@cache
def _minutes() -> dict[str, int]:
    """Part id -> the minutes its metadata states (the intro cell's for the core)."""
    nb = nbformat.read(ROOT / "source" / "q5_cost_scaling" / "q5_cost_scaling.ipynb", as_version=4)
    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("autograder", {})
        if "minutes" in meta:
            found[meta["part"]] = meta["minutes"]
    return found


def _tokens(kind: str) -> int:
    return _ns().count_tokens(_ns().texts[kind])


def _p(kind: str) -> float:
    return _tokens(kind) / _tokens("en")


def _same(*texts: str) -> str:
    """One printed number that stands for several computed ones: they must all agree."""
    return texts[0] if len(set(texts)) == 1 else f"disagree: {texts}"


def _head_mb_float16(n: int) -> float:
    return _ns().score_table_bytes(n, "float16") / 1e6


FIGURES = {
    # the time each part states in its heading is the time its metadata gives
    "29": lambda: f"{_minutes()['core']}",
    "25": lambda: f"{_minutes()['ext-layer']}",
    "15": lambda: f"{_minutes()['ext-memory']}",
    "10": lambda: f"{_minutes()['ext-tokenizers']}",
    "20": lambda: f"{_minutes()['ext-timing']}",
    # sections 1-2 and model answer (a): the score table
    "16": lambda: _same(f"{_ns().table_ratio:g}", f"{_ns().cost_ratio(1000, 4000):g}",
                        f"{_ns().score_table_entries(4000) / 1e6:g}",
                        f"{float(_ns().layer_ratio.subs(_ns().d, 0)):g}",
                        f"{32 * 32 * _head_mb_float16(4000) / (32 * 32 * _head_mb_float16(1000)):g}"),
    "1.6": lambda: f"{_ns().score_table_entries(4000) / 1e7:g}",
    "0.032": lambda: f"{_ns().score_table_bytes(4000, 'float16') / 1e9:.3f}",
    "32.8": lambda: _same(f"{_ns().score_table_bytes(128_000, 'float16') / 1e9:.1f}",
                          f"{32 * 32 * _head_mb_float16(4000) / 1e3:.1f}"),
    # 拓展 A's crossover and whole-layer ratios are no longer in the prose (issue 30: they
    # stood right under the cells that grade them); the student's own code prints them
    # 拓展 B: memory of the example model (d = 4096, 32 layers, 32 heads, float16)
    "1024": lambda: f"{32 * _head_mb_float16(4000):g}",
    "2000": lambda: f"{_ns().score_table_entries(4000) // (2 * 4000)}",
    "0.52": lambda: _same(f"{_ns().kv_cache_bytes(1, 32, 4096) / 1e6:.2f}",
                          f"{_ns().kv_cache_bytes(1000, 32, 4096) / 1e9:.2f}"),
    "2.10": lambda: f"{_ns().kv_cache_bytes(4000, 32, 4096) / 1e9:.2f}",
    # model answer (b) and 拓展 C: tokens of the parallel texts under cl100k_base
    "84": lambda: f"{_tokens('zh')}",
    "56": lambda: f"{_tokens('en')}",
    "78": lambda: _same(f"{len(_ns().texts['zh'])}", f"{_tokens('mixed')}"),
    "259": lambda: _same(f"{len(_ns().texts['en'])}", f"{len(_ns().texts['en'].encode('utf-8'))}"),
    "1.50": lambda: _same(f"{_p('zh'):.2f}", f"{_ns().p_zh:.2f}"),
    "2.25": lambda: _same(f"{_ns().relative_attention_cost(_tokens('en'), _tokens('zh')):.2f}",
                          f"{_ns().attention_zh:.2f}"),
    "1.39": lambda: _same(f"{_p('mixed'):.2f}", f"{_ns().p_mixed:.2f}"),
    "1.94": lambda: _same(f"{_ns().relative_attention_cost(_tokens('en'), _tokens('mixed')):.2f}",
                          f"{_ns().attention_mixed:.2f}"),
    "0.22": lambda: f"{_tokens('en') / len(_ns().texts['en']):.2f}",
    "1.08": lambda: f"{_tokens('zh') / len(_ns().texts['zh']):.2f}",
    "0.30": lambda: f"{len(_ns().texts['zh']) / len(_ns().texts['en']):.2f}",
    "0.90": lambda: f"{len(_ns().texts['zh'].encode('utf-8')) / len(_ns().texts['en'].encode('utf-8')):.2f}",
    "67": lambda: f"{100 / _p('zh'):.0f}",
    # 拓展 D: the timing check's floor (its factor, 10, is tested in test_bank_q5.py)
    "50": lambda: f"{q5_ext.MIN_TIMED_SECONDS * 1e6:.0f}",
}
