"""A griffe extension for the API reference (mkdocs.yml; not a page of the site).

Assay's docstrings are written for Sphinx-style readers: ``>>>`` doctest blocks (which
Markdown would render as nested quotes) and roles such as :func:`run`. This shows the
doctests as Python console code blocks and each role as inline code, so that the
reference reads as the docstrings do in ``help()``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj):`~?([^`]+)`")


def _fence_doctests(text: str) -> str:
    out: list[str] = []
    block: list[str] = []
    indent = ""

    def close() -> None:
        if block:
            out.extend([f"{indent}```pycon", *block, f"{indent}```"])
            block.clear()

    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(">>>") or (block and stripped.startswith("...")):
            if not block:
                indent = line[: len(line) - len(stripped)]
            block.append(line)
        elif block and stripped:  # the expected output of the lines above
            block.append(line)
        else:
            close()
            out.append(line)
    close()
    return "\n".join(out)


class RestDocstrings(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = ROLE.sub(r"`\1`", obj.docstring.value)
            obj.docstring.value = _fence_doctests(text)
