"""One rule for every option that takes a value: a value that looks like one of the
command's own options is refused (exit 2) before anything runs.

click hands an option the next word whatever it is: ``assay sweep s.toml --store --json
-q`` ran the whole study into an SQLite file named ``--json`` and exited 0.  A value
"looks like an option" when it starts with ``--`` or is exactly one of the command's
short options (``-q``); ``-`` (stdin/stdout) and negative numbers (``--seed -5``) are
values, left to the option's own type.  Written with ``=`` (``--store=--json``), or
attached to a short option (``-o--json``), the value is the user's choice and is
taken; so is every word after ``--`` (the benchmark's own).
"""

from __future__ import annotations

from collections.abc import Sequence

import click


class AssayCommand(click.Command):
    """Every subcommand's class: :func:`refuse_options_as_values` before click parses."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        params = self.get_params(ctx)
        if any(p.name == "shell" for p in params):
            args = hyperfine_shell(ctx, args)
        if not ctx.resilient_parsing:  # shell completion parses partial lines
            refuse_options_as_values(ctx, params, args)
        return super().parse_args(ctx, args)


#: ``--shell=VALUE`` as hyperfine spells it: the shells Assay's quick mode can use.
_SHELLS = {"none": [], "sh": ["--shell"], "/bin/sh": ["--shell"], "default": ["--shell"]}


def hyperfine_shell(ctx: click.Context, args: list[str]) -> list[str]:
    """hyperfine's ``--shell=none`` (no shell, as ``-N``) and ``--shell=sh`` (Assay's
    ``--shell`` flag) in Assay's words; another shell is refused, saying what works.

    >>> ctx = click.Context(click.Command("run"))
    >>> hyperfine_shell(ctx, ["--shell=none", "--", "x", "--shell=sh"])
    ['--', 'x', '--shell=sh']
    >>> hyperfine_shell(ctx, ["--shell=sh", "true"])
    ['--shell', 'true']
    """
    out: list[str] = []
    for i, word in enumerate(args):
        if word == "--":
            return out + args[i:]  # the benchmark's own words
        if word.startswith("--shell="):
            value = word.split("=", 1)[1]
            if value not in _SHELLS:
                raise click.BadOptionUsage(
                    "--shell",
                    f"--shell={value}: Assay's quick mode runs a command with /bin/sh "
                    "(--shell, or hyperfine's --shell=sh) or without a shell (the default; "
                    "hyperfine's --shell=none and -N)",
                    ctx,
                )
            out += _SHELLS[value]
            continue
        out.append(word)
    return out


def refuse_options_as_values(
    ctx: click.Context, params: Sequence[click.Parameter], args: Sequence[str]
) -> None:
    """Walk ``args`` as click's parser does and raise :class:`click.BadOptionUsage`
    (exit 2) for the first option whose separate value looks like an option of ours.

    The raw words are read (not the parsed values) because only they tell
    ``--store --json`` from ``--store=--json``.
    """
    takes: dict[str, click.Option] = {}  # every name of an option that takes values
    shorts: set[str] = set()
    for p in params:
        if isinstance(p, click.Option):
            shorts.update(n for n in (*p.opts, *p.secondary_opts) if _is_short(n))
            if not (p.is_flag or p.count):
                takes.update(dict.fromkeys(p.opts, p))
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word == "--":
            return  # the rest is positional: a benchmark's own options
        if word[:1] != "-" or word == "-":
            if not ctx.allow_interspersed_args:
                return  # click stops reading options at the first positional word
            continue
        name = _awaiting(word, takes)
        if name is None:
            continue
        option = takes[name]
        for k, value in enumerate(args[i : i + option.nargs]):
            if value.startswith("--") or value in shorts:
                raise click.BadOptionUsage(name, _message(name, option, value, k), ctx)
        i += option.nargs


def _is_short(name: str) -> bool:
    return len(name) == 2 and name[0] == "-" and name[1] != "-"


def _awaiting(word: str, takes: dict[str, click.Option]) -> str | None:
    """The option in ``word`` whose values are the next words, or None (a flag, a
    value given with ``=`` or attached, an unknown word)."""
    if word.startswith("--"):
        return word if word in takes else None  # '--opt=value' is not a key
    for j, ch in enumerate(word[1:], start=1):  # a cluster of short options: -qr 5
        if "-" + ch in takes:
            return "-" + ch if j == len(word) - 1 else None  # -r5: attached
    return None


def _message(name: str, option: click.Option, value: str, k: int) -> str:
    path = isinstance(option.type, click.Path) or option.metavar in ("PATH", "DIR", "FILE")
    long = next((o for o in option.opts if o.startswith("--")), None)
    n = option.nargs
    what = "a file name" if path else "a value" if n == 1 else f"{n} values"
    text = (
        f"{name} {value}: {name} takes {what}, and {value} looks like the next option; "
        f"give {name} its value{'s' if n > 1 else ''} first"
    )
    if k == 0:  # '=' carries the first value only
        meant = f"{long}={value}" if long else f"{name}{value}"
        text += f", or, if {value!r} is meant, write {meant}"
        if path:
            text += f" or {name} ./{value}"
    return text
