r"""PostgreSQL knob values stay one string, whatever the server's settings.

A knob value reaches ``ALTER SYSTEM SET name = E'...'`` (run) and postgresql.conf
(setup). The literal is read back here by small readers written from PostgreSQL's
documented rules (not from Assay's quoting), so a value that ends its literal early
would show up as text left after it. The end-to-end check sets the worst server
settings (standard_conforming_strings off, backslash_quote on, client_encoding SJIS)
and runs the issue's value: it comes back as itself and its COPY TO PROGRAM never runs.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.targets.base import TargetError
from assay.targets.postgres import (
    PostgresTarget,
    _check_knobs,
    _conf_value,
    _ident,
    _literal,
)

HAVE_PG = any(Path("/usr/lib/postgresql").glob("*/bin/initdb")) and bool(shutil.which("pgbench"))
needs_pg = pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL not installed")

#: issue #57 item 7: with standard_conforming_strings off, a plain '...' literal of this
#: ended at "\'" + "'", and the rest ran as a second statement
HOSTILE = r"\'; COPY (SELECT 1) TO PROGRAM $$touch {mark}$$;--"
#: the same escape without ';--': allowed as a knob, so it must be quoted right.
#: "Á" is C3 81 in UTF-8; SJIS reads 81 5C as one character, eating the backslash.
HOSTILE_PLAIN = "\u00c1\\'; COPY (SELECT 1) TO PROGRAM $$touch {mark}$$; SELECT $$"
#: text biased to the characters that matter to quoting
TEXT = st.text(
    st.one_of(st.sampled_from("\\'\"E;-$\n\t"), st.characters(exclude_characters="\x00"))
)

_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def read_escape_string(sql: str) -> tuple[str, str]:
    """An escape string constant ``E'...'`` at the start of ``sql`` as PostgreSQL's
    lexer reads it (docs, "String Constants with C-Style Escapes"): its value and the
    text after its closing quote. IndexError when it never closes."""
    assert sql[:2] in ("E'", "e'"), sql
    out: list[str] = []
    i = 2
    while True:
        c = sql[i]
        if c == "'" and sql[i + 1 : i + 2] == "'":
            out.append("'")
            i += 2
        elif c == "'":
            return "".join(out), sql[i + 1 :]
        elif c == "\\":
            rest = sql[i + 1 :]
            code = (
                re.match(r"[0-7]{1,3}", rest)
                or re.match(r"x([0-9A-Fa-f]{1,2})", rest)
                or re.match(r"u([0-9A-Fa-f]{4})", rest)
                or re.match(r"U([0-9A-Fa-f]{8})", rest)
            )
            if code is not None:
                digits = code.group(code.lastindex or 0)
                out.append(chr(int(digits, 8 if code.lastindex is None else 16)))
                i += 1 + code.end()
            else:
                out.append(_ESCAPES.get(rest[0], rest[0]))
                i += 2
        else:
            out.append(c)
            i += 1


def read_plain_string_legacy(sql: str) -> tuple[str, str]:
    """A plain ``'...'`` literal as read with standard_conforming_strings off: then a
    backslash escapes, as in an escape string."""
    return read_escape_string("E" + sql)


def read_conf_string(line: str) -> tuple[str, str]:
    """A quoted value at the start of ``line`` as postgresql.conf's reader takes it
    (guc-file.l: the STRING token, then its escapes undone): value and text after it."""
    m = re.match(r"'((?:[^'\\\n]|\\.|'')*)'", line)
    assert m is not None, line
    body, out, i = m.group(1), [], 0
    while i < len(body):
        if body[i] == "\\":
            octal = re.match(r"[0-7]{1,3}", body[i + 1 :])
            if octal is not None:
                out.append(chr(int(octal.group(), 8)))
                i += 1 + octal.end()
                continue
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        elif body[i : i + 2] == "''":
            out.append("'")
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out), line[m.end() :]


# -- the quoting, read back by the readers ------------------------------------------------
#: what may follow a literal in Assay's SQL, and some that an early end would leave (a
#: quote right after it would be read as a doubled quote: Assay never writes one there)
@given(TEXT, st.sampled_from(["", ")", ", E'x')", "; SELECT 1", " '; --", " \\'"]))
def test_an_escape_string_reads_back_as_the_value_and_ends_where_it_should(
    value: str, after: str
) -> None:
    assert read_escape_string(_literal(value) + after) == (value, after)


@given(TEXT.filter(lambda v: not any(ord(c) < 32 or ord(c) == 127 for c in v)))
def test_a_conf_value_reads_back_as_the_value(value: str) -> None:
    assert read_conf_string(_conf_value(value) + " # comment") == (value, " # comment")


def test_the_issues_value_stays_one_literal() -> None:
    value = HOSTILE.format(mark="/tmp/x")
    assert read_escape_string(_literal(value)) == (value, "")
    # the readers see the issue: the old quoting, read with standard_conforming_strings off
    old = "'" + value.replace("'", "''") + "'"
    assert read_plain_string_legacy(old)[1].startswith("; COPY (SELECT 1) TO PROGRAM")


def test_nul_and_control_characters_are_refused() -> None:
    with pytest.raises(TargetError, match="cannot hold the character NUL"):
        _literal("a\x00b")
    for bad in ("a\nport = 1", "a\rb", "a\x00b", "a\x7fb"):
        with pytest.raises(TargetError, match=r"control character|NUL"):
            _conf_value(bad)


def test_names_are_quoted_identifiers() -> None:
    assert _ident("work_mem") == '"work_mem"'
    assert _ident("pg_stat_statements.max") == '"pg_stat_statements"."max"'
    assert _ident('a"b') == '"a""b"'


# -- the knob rules -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "value", [HOSTILE.format(mark="/tmp/x"), "1;--", "x; SELECT 1 --", "1 ; \t--x"]
)
def test_a_statement_end_then_a_comment_is_refused(value: str) -> None:
    with pytest.raises(TargetError, match=r"knob application_name=.*refused"):
        _check_knobs({"application_name": value})


def test_the_issues_value_is_refused_for_its_statement_end() -> None:
    with pytest.raises(TargetError, match=r"refused, it has ';' followed by '--'"):
        _check_knobs({"application_name": HOSTILE.format(mark="/tmp/x")})


@pytest.mark.parametrize("name", ["standard_conforming_strings", "backslash_quote"])
def test_knobs_that_change_how_strings_read_are_refused(name: str) -> None:
    with pytest.raises(TargetError, match=f"knob {name}: refused, it decides whether"):
        _check_knobs({name: "on"})


def test_values_with_quotes_backslashes_and_dashes_alone_pass() -> None:
    _check_knobs({
        "application_name": r"it's C:\tmp", "search_path": "a; b", "syslog_ident": "x--y",
        "escape_string_warning": "off", "client_encoding": "SJIS",
    })  # fmt: skip


# -- end to end: the worst server settings ------------------------------------------------
#: a setup knob that postgresql.conf's reader would misread without its escapes
BASELINE = r"C:\new\'one'' \\two\0"


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresTarget]:
    """A private cluster set up with a baseline knob full of backslashes and quotes,
    then switched to the settings under which plain literals misread: escapes in
    plain strings, \\' as a quote, and a client encoding that eats backslashes."""
    top = Path(tempfile.mkdtemp(prefix="assay-test-pgquote-"))
    target = PostgresTarget(state=str(top / "state"), scale=1)
    try:
        target.start({"syslog_ident": BASELINE})
        st = target._running()
        target._psql(
            st,
            "ALTER SYSTEM SET standard_conforming_strings = off",
            "ALTER SYSTEM SET backslash_quote = on",
            "ALTER SYSTEM SET client_encoding = 'SJIS'",
            "SELECT pg_reload_conf()",
        )
        time.sleep(0.3)  # sessions started after the reload see it
        yield target
    finally:
        target.stop()
        shutil.rmtree(top, ignore_errors=True)


@needs_pg
@pytest.mark.slow
def test_setup_writes_the_baseline_literally(server: PostgresTarget) -> None:
    assert server._psql(server._running(), "SHOW syslog_ident") == BASELINE + "\n"


@needs_pg
@pytest.mark.slow
@pytest.mark.parametrize("template", [HOSTILE, HOSTILE_PLAIN])
def test_hostile_literals_stay_strings_under_the_worst_settings(
    server: PostgresTarget, template: str
) -> None:
    st = server._running()
    shown = server._psql(st, "SHOW standard_conforming_strings", "SHOW backslash_quote")
    assert shown.split() == ["off", "on"]
    mark = Path(st["cluster"]) / "second-statement-ran"  # the server's user may write here
    value = template.format(mark=mark)
    assert server._psql(st, f"SELECT {_literal(value)}") == value + "\n"
    assert not mark.exists()


@needs_pg
@pytest.mark.slow
def test_run_knobs_reach_alter_system_literally(server: PostgresTarget) -> None:
    st = server._running()
    mark = Path(st["cluster"]) / "second-statement-ran"
    value = HOSTILE_PLAIN.format(mark=mark)
    assert server.apply({"syslog_ident": value})["syslog_ident"] == value
    assert server._psql(st, "SHOW syslog_ident") == value + "\n"
    with pytest.raises(TargetError, match="followed by '--'"):
        server.apply({"syslog_ident": HOSTILE.format(mark=mark)})
    assert not mark.exists()
    server.apply({})  # back to the baseline: ALTER SYSTEM RESET "syslog_ident"
    assert server._psql(st, "SHOW syslog_ident") == BASELINE + "\n"
