"""Hidden texts of q5's token checks, drawn for each student from the seed: Chinese,
English and mixed sentences (digits, symbols, emoji), so counting and the token
multipliers are graded on texts the notebook never shows."""

from __future__ import annotations

from . import Context

__all__ = ["token_texts", "writing_pairs"]

_ZH_WORDS = ("注意力", "模型", "文本", "长度", "计算", "代价", "中文", "英文", "分词", "我们", "今天",
             "学习", "每个", "句子", "向量", "矩阵", "训练", "数据", "长文档", "打分表", "显存", "上下文",
             "窗口", "位置", "编码", "语言", "翻译", "平方", "增长", "的", "了", "是", "在", "和", "把",
             "会", "很", "就", "都", "也", "让", "被", "龘", "囧", "饕餮", "耄耋")
_EN_WORDS = ("attention", "model", "token", "tokens", "the", "of", "long", "document", "cost", "score",
             "table", "we", "learn", "vector", "matrix", "training", "data", "is", "a", "quadratic",
             "context", "window", "Transformer", "GPU", "memory", "self-attention", "tokenizer",
             "multilingual", "FlashAttention", "KV", "cache", "n²", "O(n)", "don't", "it's")
_ZH_PUNCT = ("，", "。", "：", "、", "！", "？", "（", "）", "“", "”")
_EN_PUNCT = (",", ".", ":", "!", "?", ";", "(", ")", "-")
_EXTRA = ("😀", "🚀", "🤖", "👍🏽", "1000", "4000", "3.14", "2024", "×", "→", "√", "é", "ß", "Ж", "한국어",
          "日本語", "\n", "\t", "  ")


def _pick(ctx: Context, pool: tuple[str, ...]) -> str:
    return pool[int(ctx.rng.integers(len(pool)))]


def _zh_text(ctx: Context, words: int) -> str:
    parts = [_pick(ctx, _ZH_WORDS) + (_pick(ctx, _ZH_PUNCT) if ctx.rng.random() < 0.2 else "")
             for _ in range(words)]
    return "".join(parts) + "。"


def _en_text(ctx: Context, words: int) -> str:
    parts = [_pick(ctx, _EN_WORDS) + (_pick(ctx, _EN_PUNCT) if ctx.rng.random() < 0.15 else "")
             for _ in range(words)]
    text = " ".join(parts)
    return text[:1].upper() + text[1:] + "."


def _mixed_text(ctx: Context, words: int, extras: bool) -> str:
    out = []
    for _ in range(words):
        r = ctx.rng.random()
        if r < 0.55:
            out.append(_pick(ctx, _ZH_WORDS))
        elif r < 0.85 or not extras:
            out.append(" " + _pick(ctx, _EN_WORDS) + " ")
        else:
            out.append(_pick(ctx, _EXTRA))
        if ctx.rng.random() < 0.15:
            out.append(_pick(ctx, _ZH_PUNCT + _EN_PUNCT))
    return "".join(out).strip()


def token_texts(ctx: Context) -> list[tuple[str, str]]:
    """(text, description) pairs; descriptions summarise, never print the hidden strings."""
    texts = [("", "空字符串")]
    made = [(_zh_text(ctx, int(ctx.rng.integers(4, 15))), "中文句子"),
            (_en_text(ctx, int(ctx.rng.integers(5, 20))), "英文句子"),
            (_mixed_text(ctx, int(ctx.rng.integers(6, 20)), extras=False), "中英混合文本"),
            (_mixed_text(ctx, int(ctx.rng.integers(6, 20)), extras=True), "含数字、符号与 emoji 的混合文本"),
            (_mixed_text(ctx, int(ctx.rng.integers(40, 80)), extras=True), "较长的混合文本")]
    texts += [(text, f"{desc}（{len(text)} 个字符）") for text, desc in made]
    return texts



def writing_pairs(ctx: Context) -> list[tuple[str, str, str]]:
    """(text, english, description): this student's own hidden pairs, so the method is
    graded, not the two numbers of the notebook's fixed texts."""
    en = [_en_text(ctx, int(ctx.rng.integers(8, 25))) for _ in range(2)]
    return [(_zh_text(ctx, int(ctx.rng.integers(6, 20))), en[0], "隐藏的中文文本与英文文本"),
            (_mixed_text(ctx, int(ctx.rng.integers(8, 25)), extras=True), en[1], "隐藏的混合文本与英文文本")]
