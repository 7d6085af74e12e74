"""The house plan holds: no import circle in ``src/assay``, and the layers import only
downwards (DESIGN.md: cli → studies → designs/execute/store → stats; report imports
studies, never the reverse; nothing imports cli).

Every ``import`` counts, wherever it stands: at the top, inside a function (a lazy
import is still a dependency) or under ``TYPE_CHECKING`` (a type is still knowledge of
the other module).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

#: Package -> the packages it must never import.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "assay.stats": (
        "assay.cli",
        "assay.studies",
        "assay.report",
        "assay.designs",
        "assay.execute",
        "assay.store",
        "assay.targets",
        "assay.importers",
        "assay.spec",
    ),
    "assay.designs": (
        "assay.cli",
        "assay.studies",
        "assay.report",
        "assay.execute",
        "assay.store",
        "assay.targets",
        "assay.importers",
    ),
    "assay.execute": ("assay.cli", "assay.studies", "assay.report", "assay.designs"),
    "assay.importers": ("assay.cli", "assay.studies", "assay.report", "assay.execute"),
    "assay.studies": ("assay.cli", "assay.report"),
    "assay.report": ("assay.cli",),
    "assay.store": ("assay.cli", "assay.studies", "assay.report", "assay.designs"),
    "assay.spec": ("assay.cli", "assay.studies", "assay.report", "assay.execute"),
    "assay.targets": (
        "assay.cli",
        "assay.studies",
        "assay.report",
        "assay.designs",
        "assay.execute",
        "assay.spec",
        "assay.store",
    ),
}


def module_sources(root: Path = SRC) -> dict[str, str]:
    """Every module of the ``assay`` package by dotted name, with its source."""
    out = {}
    for path in sorted((root / "assay").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path.read_text(encoding="utf-8")
    return out


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports (anywhere in its body)."""
    graph: dict[str, set[str]] = {}
    for name, text in sources.items():
        is_package = f"{name}.__init__" not in sources and any(
            other.startswith(name + ".") for other in sources
        )
        package = name if is_package else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    deps.add(sub if sub in sources else base)
        graph[name] = {d for d in deps if d in sources and d != name}
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """``a -> b`` for every import that goes up the house plan (see :data:`FORBIDDEN`)."""
    bad: list[str] = []
    for module, deps in sorted(graph.items()):
        for package, forbidden in FORBIDDEN.items():
            if not _within(module, package):
                continue
            bad.extend(
                f"{module} -> {d}" for d in sorted(deps) if any(_within(d, f) for f in forbidden)
            )
        if not _within(module, "assay.cli") and module != "assay.__main__":
            bad.extend(f"{module} -> {d}" for d in sorted(deps) if _within(d, "assay.cli"))
    return bad


def test_no_import_circle() -> None:
    found = cycles(import_graph(module_sources()))
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_layers_import_only_downwards() -> None:
    assert layer_violations(import_graph(module_sources())) == []


def test_every_study_kind_has_its_loop_and_its_command() -> None:
    sources = module_sources()
    for kind in ("run", "compare", "order", "sweep", "knobs"):
        assert f"assay.studies.{kind}" in sources
        assert f"assay.cli.{kind}" in sources
    assert "assay.studies.settings" in sources


def test_the_circle_check_finds_a_circle_it_is_given() -> None:
    sources = module_sources()
    # a report type reached back from a study loop: the circle of issue #12
    sources["assay.studies.compare"] += "\nfrom assay.report.compare import csv_rows\n"
    found = cycles(import_graph(sources))
    assert any({"assay.studies.compare", "assay.report.compare"} <= set(c) for c in found)
    assert "assay.studies.compare -> assay.report.compare" in layer_violations(
        import_graph(sources)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import assay.b", {"assay.b"}),
        ("from assay import b", {"assay.b"}),
        ("from assay.b import thing", {"assay.b"}),
        ("def f():\n    from . import b", {"assay.b"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import assay.b", {"assay.b"}),
        ("import os", set()),
    ],
)
def test_every_kind_of_import_is_an_edge(text: str, expected: set[str]) -> None:
    sources = {"assay": "", "assay.a": text, "assay.b": ""}
    assert import_graph(sources)["assay.a"] == expected
