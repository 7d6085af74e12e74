"""Argument templates: ``{name}`` is replaced by a parameter's value.

Only ``{identifier}`` is a placeholder, and the cluster's dotted names ``{host.NAME}``
and ``{hosts.NAME}`` (a multi-host study's roles: :mod:`assay.execute.roles`); any other
brace (Python f-strings, JSON, awk, ``{obj.attr}``) is left as it is, and ``{{`` / ``}}``
stand for literal braces around a name.

>>> placeholders("--rows={rows} {{literal}} f'{x + 1}'")
['rows']
>>> render("--rows={rows} {{rows}} {x + 1}", {"rows": 5})
'--rows=5 {rows} {x + 1}'
>>> placeholders("-h {hosts.server} --id {host.index} {self.x}")
['hosts.server', 'host.index']
>>> import shlex
>>> render("echo {v}", {"v": "$(rm -rf ~)"}, quote=shlex.quote)  # a value as one shell word
"echo '$(rm -rf ~)'"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

# dotted names only under host./hosts.: an f-string's {obj.attr} stays text, as before
_TOKEN = re.compile(r"\{\{|\}\}|\{((?:hosts?\.)?[A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(template: str) -> list[str]:
    """Names of the placeholders in ``template``, in order."""
    return [m.group(1) for m in _TOKEN.finditer(template) if m.group(1)]


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(
    template: str,
    values: Mapping[str, object],
    quote: Callable[[str], str] | None = None,
) -> str:
    """Substitute placeholders; raise KeyError naming a placeholder without a value.

    ``quote`` is applied to each substituted value (``shlex.quote`` for a command a
    shell will read), never to the template's own text.
    """

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        name = m.group(1)
        if name not in values:
            raise KeyError(f"no value for placeholder '{{{name}}}'")
        text = _text(values[name])
        return quote(text) if quote is not None else text

    return _TOKEN.sub(sub, template)
