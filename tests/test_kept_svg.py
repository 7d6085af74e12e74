"""The check a kept plot's SVG passes before a report page inlines it (#60: a store is
data, and a report page is opened in a browser)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.report.html import _figure, _render, _save
from assay.report.kept_svg import plot_svg


def _every_artist(path: Path) -> None:
    """A figure with the artists our plots draw (lines, markers, bars, shading, an
    image with its colour bar, hatching, a legend, rotated text)."""
    fig, (ax, ax2) = _figure(8.0, 3.0, ncols=2)
    xs = np.arange(10.0)
    ax.plot(xs, xs**0.5, "o-", label="a line")
    ax.errorbar(xs, xs, yerr=0.5, fmt="s", label="bars")
    ax.fill_between(xs, xs - 1, xs + 1, alpha=0.2, hatch="//")
    ax.bar(xs, xs / 2, color="tab:red", alpha=0.4)
    ax.axvspan(2, 3, color="tab:green", alpha=0.1)
    ax.text(1, 1, "a <b>&'\"", rotation=45, parse_math=False)
    ax.legend()
    image = ax2.imshow(np.arange(12.0).reshape(3, 4), aspect="auto")
    fig.colorbar(image, ax=ax2)
    _save(fig, path)


def _wrap(inner: str) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="10pt" height="10pt" viewBox="0 0 10 10" version="1.1">{inner}</svg>'
    )


def test_what_matplotlib_writes_for_our_plots_passes() -> None:
    plot = _render("every", "every artist", _every_artist, png=False)
    assert "<image" in plot.svg and "<use" in plot.svg and "<style" in plot.svg
    assert plot_svg(plot.svg)


@pytest.mark.parametrize(
    "inner",
    [
        "<script>alert(1)</script>",
        '<a href="https://evil.example/"><text>click</text></a>',
        '<a xlink:href="javascript:alert(1)"><path d="M 0 0"/></a>',
        "<foreignObject><p>hi</p></foreignObject>",
        '<svg width="1"><path d="M 0 0"/></svg>',  # a nested document
        "<style>body{display:none}</style>",  # a page-wide style
        "<style>*{display:none}</style>",
        "<style>*{stroke-linejoin: round} @import url(https://evil.example/)</style>",
        '<path d="M 0 0" onload="alert(1)"/>',
        '<path d="M 0 0" style="fill: url(https://evil.example/p)"/>',
        '<path d="M 0 0" style="fill: \\75 rl(https://evil.example/p)"/>',  # a CSS escape
        '<path d="M 0 0" style="fill: image-set(\'https://evil.example/p\' 1x)"/>',
        '<path d="M 0 0" clip-path="url(https://evil.example/#c)"/>',
        '<image xlink:href="https://evil.example/t.png" width="1" height="1"/>',
        '<image xlink:href="data:image/svg+xml;base64,PHN2Zz4=" width="1" height="1"/>',
        '<use xlink:href="https://evil.example/s.svg#a"/>',
        "<!-- a comment --><path d='M 0 0'/>",
        "<text><![CDATA[</svg><script>alert(1)</script>]]></text>",
        '<h:script xmlns:h="http://www.w3.org/1999/xhtml">alert(1)</h:script>',
        "<animate attributeName='href' to='javascript:alert(1)'/>",
        "<set attributeName='onload' to='alert(1)'/>",
        "<b>breaks out of SVG in an HTML parser</b>",
    ],
)
def test_anything_else_is_refused(inner: str) -> None:
    assert plot_svg(_wrap('<path d="M 0 0 L 1 1 z"/>'))
    assert not plot_svg(_wrap(inner))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not xml",
        '<?xml version="1.0"?>' + _wrap(""),
        '<!DOCTYPE svg [<!ENTITY a "aaaa">]>' + _wrap("<text>&a;</text>"),
        _wrap("") + "<script>alert(1)</script>",  # after the document
        '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
        '<svg xmlns="http://www.w3.org/2000/svg" style="position:fixed"/>',
        "<svg/>",  # not in SVG's namespace
        '<html xmlns="http://www.w3.org/1999/xhtml"/>',
    ],
)
def test_a_document_that_is_not_one_plot_is_refused(text: str) -> None:
    assert not plot_svg(text)


@given(st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "P", "S", "Zs"])))
def test_a_text_element_may_hold_any_escaped_text(words: str) -> None:
    from html import escape

    assert plot_svg(_wrap(f'<text x="1" y="2" style="font-size: 10px">{escape(words)}</text>'))


@given(st.sampled_from(["script", "a", "iframe", "foreignObject", "animate", "set", "div"]))
def test_an_element_a_plot_does_not_draw_is_refused_anywhere(tag: str) -> None:
    deep = f'<g id="a"><g clip-path="url(#c)"><{tag}/></g></g>'
    assert not plot_svg(_wrap(deep))
