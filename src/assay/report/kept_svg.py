"""A plot's SVG read back from a store, checked before a page inlines it.

A sweep or knob study keeps its report's plots in its store (rendering them is most of
a report's time, #60), and a store is data: it may come from anyone.  A page inlines a
kept plot only when the SVG holds nothing but what Matplotlib's SVG backend writes for
our plots: SVG elements that draw paths, text and PNG images given inline, references
inside the plot, and the backend's one default style rule.  So a store cannot put a
script, a link, an outside resource or a page-wide style on a report (the page's
Content-Security-Policy blocks scripts and outside loads as well); a plot that fails
the check is drawn again from the trials.

>>> plot_svg('<svg xmlns="http://www.w3.org/2000/svg" width="10pt" height="10pt">'
...          '<path d="M 0 0 L 1 1 z" style="fill: #1f77b4"/></svg>')
True
>>> plot_svg('<svg xmlns="http://www.w3.org/2000/svg"><style>*{display: none}</style></svg>')
False
"""

from __future__ import annotations

import re
from xml.etree import ElementTree

_SVG = "{http://www.w3.org/2000/svg}"
_HREFS = ("href", "{http://www.w3.org/1999/xlink}href")
#: The elements Matplotlib's SVG backend writes for a figure (no link, no script, no
#: foreign content, no nested document).
_ELEMENTS = frozenset(
    [
        "g",
        "defs",
        "style",
        "path",
        "use",
        "clipPath",
        "rect",
        "image",
        "text",
        "tspan",
        "pattern",
        "linearGradient",
        "stop",
    ]
)
_ATTRIBUTES = frozenset(
    [
        "id",
        "d",
        "style",
        "transform",
        "x",
        "y",
        "width",
        "height",
        "viewBox",
        "version",
        "clip-path",
        "type",
        "patternUnits",
        "x1",
        "x2",
        "y1",
        "y2",
        "offset",
        "fill",
        "stroke",
        "stroke-width",
        "opacity",
    ]
) | frozenset(_HREFS)
#: What an attribute value may hold: numbers, names, colours, transforms and style
#: declarations; never a backslash (a CSS escape could spell ``url``), ``<``, ``&`` or
#: ``@``.
_VALUE = re.compile(r"[A-Za-z0-9 \t\n.,:;#%'\"_()*+/-]*")
#: The only function a style may call: a reference inside the plot.
_LOCAL_URL = re.compile(r"url\(#[A-Za-z0-9_-]+\)")
_HREF = re.compile(r"#[A-Za-z0-9_-]+|data:image/png;base64,[A-Za-z0-9+/=\s]*")
#: The backend's default style (``*{stroke-linejoin: round; stroke-linecap: butt}``):
#: a rule for every element of the page, so only strokes' joins and caps may be set.
_DEFAULT_STYLE = re.compile(r"\s*\*\s*\{\s*(?:stroke-line(?:join|cap)\s*:\s*[a-z]+\s*;?\s*)*\}\s*")


def plot_svg(text: str) -> bool:
    """Whether ``text`` is one SVG document of only what Matplotlib writes for a plot
    (the check above); anything else (a doctype, a comment, a CDATA section, another
    namespace, an element or attribute it does not write) is refused."""
    if "<!" in text or "<?" in text:  # no doctype (entities), comment or CDATA
        return False
    try:
        root = ElementTree.fromstring(text)  # no doctype: no entity to expand
    except ElementTree.ParseError:
        return False
    if root.tag != f"{_SVG}svg" or set(root.attrib) - {"width", "height", "viewBox", "version"}:
        return False
    return all(_element_ok(el) for el in root.iter() if el is not root)


def _element_ok(el: ElementTree.Element) -> bool:
    tag = el.tag.removeprefix(_SVG) if isinstance(el.tag, str) else ""
    if tag not in _ELEMENTS or el.tag == tag:  # outside the SVG namespace
        return False
    if tag == "style" and not _DEFAULT_STYLE.fullmatch(el.text or ""):
        return False
    for name, value in el.attrib.items():
        if name not in _ATTRIBUTES:
            return False
        if name in _HREFS:
            if not _HREF.fullmatch(value):
                return False
        elif not _VALUE.fullmatch(value):
            return False
        elif name != "transform" and "(" in _LOCAL_URL.sub("", value):
            return False  # a call other than a local url() (a transform's are geometry)
    return True
