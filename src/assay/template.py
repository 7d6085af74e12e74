"""Argument templates: ``{name}`` is replaced by a parameter's value.

Only ``{identifier}`` is a placeholder, and the cluster's dotted names ``{host.NAME}``
and ``{hosts.NAME}`` (a multi-host study's roles: :mod:`assay.execute.roles`) and a
fault's ``{fault.NAME}`` (its steps': :class:`assay.rolespec.FaultSpec`); any other
brace (Python f-strings, JSON, awk, ``{obj.attr}``) is left as it is, and ``{{`` / ``}}``
stand for literal braces around a name.

>>> placeholders("--rows={rows} {{literal}} f'{x + 1}'")
['rows']
>>> render("--rows={rows} {{rows}} {x + 1}", {"rows": 5})
'--rows=5 {rows} {x + 1}'
>>> placeholders("-h {hosts.server} --id {host.index} {self.x} {fault.action}")
['hosts.server', 'host.index', 'fault.action']
>>> parts("a{{b}} {x}!")
(('a{b} ', 'x'), ('!', None))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

# dotted names only under host./hosts./fault.: an f-string's {obj.attr} stays text
_TOKEN = re.compile(r"\{\{|\}\}|\{((?:hosts?\.|fault\.)?[A-Za-z_][A-Za-z0-9_]*)\}")


@functools.lru_cache(maxsize=1024)
def parts(template: str) -> tuple[tuple[str, str | None], ...]:
    """``template`` cut after each placeholder: (the literal text before it, ``{{`` and
    ``}}`` made single braces; its name), the last pair's name None.  Kept: every trial
    renders the same few templates."""
    out: list[tuple[str, str | None]] = []
    text: list[str] = []
    last = 0
    for m in _TOKEN.finditer(template):
        text.append(template[last : m.start()])
        last = m.end()
        if m.group(1):
            out.append(("".join(text), m.group(1)))
            text = []
        else:
            text.append(m.group(0)[0])
    text.append(template[last:])
    out.append(("".join(text), None))
    return tuple(out)


def placeholders(template: str) -> list[str]:
    """Names of the placeholders in ``template``, in order."""
    return [name for _, name in parts(template) if name]


def value_text(values: Mapping[str, object], name: str) -> str:
    """The text of placeholder ``name``'s value (a boolean as TOML writes it); KeyError
    naming the placeholder when it has none."""
    if name not in values:
        raise KeyError(f"no value for placeholder '{{{name}}}'")
    v = values[name]
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def render(template: str, values: Mapping[str, object]) -> str:
    """Substitute placeholders; raise KeyError naming a placeholder without a value.

    The values are pasted in as they are: a command a shell reads is rendered by
    :func:`assay.execute.command.render_argv`, which never puts a value in its text.
    """
    return "".join(
        text + (value_text(values, name) if name else "") for text, name in parts(template)
    )
