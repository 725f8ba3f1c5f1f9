"""HTML built from student text, made safe for a browser by a real sanitiser (``nh3``).

Everything a student wrote that reaches a page as markup (a written answer's Markdown,
LaTeX rendered as MathML, a ``text/markdown`` output) passes through :func:`safe_html`
last, after rendering: what comes out has the tags Markdown and MathML need and nothing
that runs script (no ``<script>``, ``<iframe>``, ``<svg>``, ``<style>``, no ``on*`` or
``style`` attributes, no ``class`` but :data:`BOX_CLASSES` (so no text poses as a
verdict), links only to ``http(s)``/``mailto``/in-page anchors, images only as
``data:image/png`` or ``data:image/jpeg``: the page loads nothing from elsewhere).
nbgrader's pages (formgrader, ``generate_feedback``) use it too, through
:mod:`autograder.integrations.nbgrader.preprocessors`.
"""

from __future__ import annotations

import re

import nh3

__all__ = ["safe_html", "TAGS", "MATHML_TAGS"]

#: What latex2mathml writes, and the rest of MathML core's presentation elements.
MATHML_TAGS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup",
    "mfrac", "msqrt", "mroot", "mstyle", "mover", "munder", "munderover", "mtable", "mtr",
    "mtd", "menclose", "mpadded", "mphantom", "merror", "mmultiscripts", "mprescripts",
    "none", "semantics", "annotation",
})
_MATHML_ATTRIBUTES = frozenset({
    "display", "xmlns", "mathvariant", "mathcolor", "mathbackground", "mathsize", "stretchy",
    "fence", "separator", "separators", "form", "lspace", "rspace", "symmetric", "largeop",
    "movablelimits", "minsize", "maxsize", "accent", "accentunder", "linethickness",
    "displaystyle", "scriptlevel", "columnalign", "columnspacing", "columnlines", "rowalign",
    "rowspacing", "rowlines", "frame", "framespacing", "width", "height", "depth", "notation",
    "open", "close", "encoding",
})
#: Markdown's tags (mistune's output, and the raw HTML a student may write in Markdown).
_MARKDOWN_TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "b", "i", "u", "s",
    "del", "ins", "mark", "sub", "sup", "small", "code", "pre", "kbd", "samp", "var", "q",
    "blockquote", "ul", "ol", "li", "dl", "dt", "dd", "a", "img", "table", "thead", "tbody",
    "tfoot", "tr", "th", "td", "caption", "colgroup", "col", "div", "span", "details",
    "summary", "abbr", "cite", "dfn", "figure", "figcaption",
})
TAGS = _MARKDOWN_TAGS | MATHML_TAGS
_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"}, "img": {"src", "alt", "title", "width", "height"},
    "th": {"align", "colspan", "rowspan"}, "td": {"align", "colspan", "rowspan"},
    "ol": {"start"}, "abbr": {"title"}, "div": {"class"},
    **{tag: set(_MATHML_ATTRIBUTES) for tag in MATHML_TAGS},
}
#: The one class kept (on ``div``): it only makes a box scroll sideways.
BOX_CLASSES = frozenset({"mathbox"})
#: Our own figures (and a student's pasted PNG/JPEG): inline pictures, nothing fetched.
_IMAGE_DATA = re.compile(r"data:image/(png|jpeg);base64,[A-Za-z0-9+/=\s]*\Z")


def _attribute(tag: str, name: str, value: str) -> str | None:
    """An image's source must be inline PNG/JPEG, a link's never ``data:``; every other
    allowed value stays (nh3 has already refused other URL schemes)."""
    if tag == "img" and name == "src":
        return value if _IMAGE_DATA.match(value.strip()) else None
    if tag == "a" and name == "href" and value.strip().lower().startswith("data:"):
        return None
    if name == "class":  # only the box display maths scrolls in (feedback_page)
        return value if value in BOX_CLASSES else None
    return value


def safe_html(fragment: str) -> str:
    """``fragment`` (HTML rendered from student text) with everything that could run
    script or load anything removed; text and allowed markup are kept."""
    return nh3.clean(fragment, tags=set(TAGS), attributes=_ATTRIBUTES,
                     attribute_filter=_attribute, url_schemes={"http", "https", "mailto",
                                                               "data"},
                     link_rel="noopener noreferrer nofollow", strip_comments=True)
