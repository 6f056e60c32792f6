"""The package's import graph keeps its layering: no cycles, two independent pipelines, arrows pointing down.

The graph is read from the source by ``scripts/import_graph.py`` (every import statement,
function-level ones included; ``TYPE_CHECKING`` ones kept apart but counted, for the direction
of the layers and as cycles). Layers, top to bottom::

    functions / cli / local / eval  ->  wiring  ->  adapters  ->  triage | bulk | summarize  ->  extract | ingest
        ->  search  ->  core

``config`` and ``observability`` sit beside ``core`` at the bottom.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import import_graph  # noqa: E402

MAX_MODULE_LINES = 400

@pytest.fixture(scope="module")
def graph() -> dict[str, import_graph.Module]:
    """The module graph of ``layers/longdoc/longdoc``."""
    return import_graph.build_graph()


def edges_between(graph: dict[str, import_graph.Module], sources: set[str],
                  targets: set[str]) -> list[tuple[str, str]]:
    """Module edges from a module of a ``sources`` component to one of a ``targets`` component."""
    return sorted((m.name, t) for m in graph.values() if m.component in sources
                  for t in m.all_imports if graph[t].component in targets)


def test_the_graph_sees_function_level_imports(graph: dict[str, import_graph.Module]) -> None:
    # Given wiring, which imports every adapter inside the function that builds it
    # When the graph is built
    # Then those lazy imports are edges
    assert {"longdoc.adapters.blob", "longdoc.adapters.state"} <= graph["longdoc.wiring"].imports


def test_typing_only_imports_are_kept_apart(graph: dict[str, import_graph.Module]) -> None:
    # Given ingest.pipeline, which imports config's settings only under TYPE_CHECKING
    pipeline = graph["longdoc.ingest.pipeline"]
    # Then that import is typing-only, and still an edge for the layering and cycle checks
    assert "longdoc.config" in pipeline.type_imports
    assert "longdoc.config" not in pipeline.imports
    assert "longdoc.config" in pipeline.all_imports


def test_a_cycle_through_a_typing_only_import_is_a_cycle(tmp_path: Path) -> None:
    # Given a package whose two modules import each other, one of them only under TYPE_CHECKING
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import H\n")
    (root / "high.py").write_text("from pkg.low import L\n")
    graph = import_graph.build_graph(root)
    # Then the cycle check finds them, and only the run-time view leaves them out
    assert import_graph.find_cycles(graph) == [["pkg.high", "pkg.low"]]
    assert import_graph.find_cycles(graph, typing=False) == []


def test_no_import_cycles_between_modules(graph: dict[str, import_graph.Module]) -> None:
    # Given the module graph, typing-only imports included, When its strongly connected components are found
    cycles = import_graph.find_cycles(graph)
    # Then none has more than one module
    assert cycles == []


def test_ingest_and_extract_never_import_each_other(graph: dict[str, import_graph.Module]) -> None:
    assert edges_between(graph, {"longdoc.ingest"}, {"longdoc.extract"}) == []
    assert edges_between(graph, {"longdoc.extract"}, {"longdoc.ingest"}) == []


def test_triage_never_imports_ingest_or_anything_above_it(graph: dict[str, import_graph.Module]) -> None:
    # Given triage, which sits above extract (LAYERS in scripts/import_graph.py)
    above = {f"longdoc.{name}" for name in ("ingest", "adapters", "wiring", "local", "eval", "cli")}
    # Then it imports only search, core and the bottom row
    assert edges_between(graph, {"longdoc.triage"}, above) == []
    assert edges_between(graph, {"longdoc.triage"}, {"longdoc.search"}) != []


def test_triage_and_summarize_import_nothing_of_extract(graph: dict[str, import_graph.Module]) -> None:
    # Given triage and summarize, which share retrieval, quotes and prices with extract through search and core
    # Then neither reaches into extract (retuning extraction cannot change them)
    assert edges_between(graph, {"longdoc.triage", "longdoc.summarize"}, {"longdoc.extract"}) == []


def test_bulk_uses_only_the_public_surface_of_extract(graph: dict[str, import_graph.Module]) -> None:
    # Given bulk, which drives extraction sessions round by round
    edges = edges_between(graph, {"longdoc.bulk"}, {"longdoc.extract"})
    # Then every import of extract goes through longdoc.extract.public
    assert edges != []
    assert [(m, t) for m, t in edges if t != "longdoc.extract.public"] == []


def test_search_imports_only_core_and_config(graph: dict[str, import_graph.Module]) -> None:
    # Given search, the shared retrieval machinery below every stage
    allowed = {"longdoc.search", "longdoc.core", "longdoc.config"}
    # Then it imports nothing but itself, core and config
    assert sorted((m.name, t) for m in graph.values() if m.component == "longdoc.search"
                  for t in m.all_imports if graph[t].component not in allowed) == []


def test_core_imports_no_pipeline_adapter_or_entry_point(graph: dict[str, import_graph.Module]) -> None:
    above = {f"longdoc.{name}" for name in ("ingest", "extract", "search", "triage", "bulk", "summarize", "adapters",
                                            "wiring", "local", "eval", "cli")}
    assert edges_between(graph, {"longdoc.core"}, above) == []


def test_adapters_never_import_entry_points_or_wiring(graph: dict[str, import_graph.Module]) -> None:
    above = {f"longdoc.{name}" for name in ("local", "eval", "cli", "wiring")}
    assert edges_between(graph, {"longdoc.adapters"}, above) == []


def test_every_arrow_points_down_or_sideways(graph: dict[str, import_graph.Module]) -> None:
    # Given the rank of each component (0 = top) from the script's LAYERS
    rank = {component: row for row, layer in enumerate(import_graph.LAYERS) for component in layer}
    # When every module edge is compared with the ranks of its two ends
    upward = sorted((m.name, t) for m in graph.values() for t in m.all_imports
                    if m.component in rank and graph[t].component in rank
                    and rank[graph[t].component] < rank[m.component])
    # Then no edge goes to a higher layer
    assert upward == []


def test_no_product_module_over_400_lines(graph: dict[str, import_graph.Module]) -> None:
    handlers = {f"functions/{p.parent.name}/app.py": len(p.read_text(encoding="utf-8").splitlines())
                for p in (REPO / "functions").glob("*/app.py")}
    sizes = {**{m.name: m.lines for m in graph.values()}, **handlers}
    assert {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}


def test_the_script_prints_paste_ready_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    # When the script prints its default views
    import_graph.main([])
    out = capsys.readouterr().out
    # Then there is a Mermaid diagram and a module table with one row per module
    assert out.startswith("```mermaid\nflowchart TD\n")
    assert "| module | lines | purpose |" in out
    assert "| `longdoc.wiring` |" in out
