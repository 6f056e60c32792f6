"""The package's import graph keeps its layering: no cycles, two independent pipelines, arrows pointing down.

The graph is read from the source by ``scripts/import_graph.py`` (every import statement,
function-level ones included; ``TYPE_CHECKING`` ones kept apart but counted, for the direction
of the layers and as cycles). Layers, top to bottom::

    functions / cli / local / eval  ->  wiring  ->  adapters  ->  triage | bulk | summarize  ->  extract | ingest
        ->  search  ->  core

``config`` and ``observability`` sit beside ``core`` at the bottom.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import import_graph  # noqa: E402

MAX_MODULE_LINES = 400
RAISED_CAPS = {"longdoc.wiring": 460, "longdoc.core.errors": 480}
"""Modules allowed past :data:`MAX_MODULE_LINES`, each for a reason: ``wiring`` is the one composition
root (every adapter, starter, stage bundle and the token counter budgets use); cut in two it would be two
places where composition happens. ``core.errors`` is the one catalogue of error names (each class name is
a Step Functions error name that retriers and catchers match, and ``test_error_names`` keeps them all in
it); split, the catalogue would have two homes."""

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
    assert {name: lines for name, lines in sizes.items() if lines > RAISED_CAPS.get(name, MAX_MODULE_LINES)} == {}


def test_the_script_prints_paste_ready_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    # When the script prints its default views
    import_graph.main([])
    out = capsys.readouterr().out
    # Then there is a Mermaid diagram and a module table with one row per module
    assert out.startswith("```mermaid\nflowchart TD\n")
    assert "| module | lines | purpose |" in out
    assert "| `longdoc.wiring` |" in out


FUNCTIONS = REPO / "functions"
MODULE_LOADERS = {"load_handler", "import_module", "__import__"}
"""Calls that answer a module (a handler file loaded by path, or ``importlib.import_module``)."""


def imported_modules(tree: ast.AST) -> set[str]:
    """Every absolute module an ``import`` or ``from ... import`` of ``tree`` names (any scope), with the
    ``from`` names as submodules (``from longdoc import adapters`` -> ``longdoc.adapters``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def handler_files() -> list[Path]:
    """The Lambda handlers and their sibling modules (``functions/*/*.py``)."""
    return sorted(FUNCTIONS.glob("*/*.py"))


def test_only_wiring_imports_adapters(graph: dict[str, import_graph.Module]) -> None:
    # Given the package graph and the handler files (functions/*/*.py, parsed alike)
    allowed = {"longdoc.wiring", "longdoc.adapters"}
    in_package = sorted((m.name, t) for m in graph.values() for t in m.all_imports
                        if graph[t].component == "longdoc.adapters" and m.component not in allowed)
    in_handlers = sorted((str(p.relative_to(REPO)), name) for p in handler_files()
                         for name in imported_modules(ast.parse(p.read_text(encoding="utf-8")))
                         if name == "longdoc.adapters" or name.startswith("longdoc.adapters."))
    # Then only wiring (and the adapters themselves) build adapters
    assert in_package == []
    assert in_handlers == []


def _module_valued(node: ast.AST, modules: set[str]) -> bool:
    """Whether ``node`` is (or holds, in a container or a comprehension) a module: a name in ``modules``,
    ``sys.modules[...]``, a call of :data:`MODULE_LOADERS`, or ``.items()``/``.values()``/``.keys()`` of one."""
    if isinstance(node, ast.Name):
        return node.id in modules
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) == "sys.modules" or _module_valued(node.value, modules)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in MODULE_LOADERS:
            return True
        return (isinstance(func, ast.Attribute) and func.attr in ("items", "values", "keys")
                and _module_valued(func.value, modules))
    if isinstance(node, ast.Dict):
        return any(_module_valued(part, modules) for part in [*node.keys, *node.values] if part is not None)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return any(_module_valued(e, modules) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _module_valued(node.value, modules)
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return any(_module_valued(p, modules) for p in parts + [g.iter for g in node.generators])
    if isinstance(node, ast.IfExp):
        return _module_valued(node.body, modules) or _module_valued(node.orelse, modules)
    return False


def _bindings(tree: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """``(target, value)`` of every assignment, ``for`` loop, ``with ... as`` and comprehension of ``tree``."""
    pairs: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs += [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            pairs.append((node.target, node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            pairs.append((node.target, node.iter))
        elif isinstance(node, ast.With | ast.AsyncWith):
            pairs += [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars is not None]
    return pairs


def module_attribute_assignments(source: str) -> list[str]:
    """The statements of ``source`` that set an attribute of a module at run time, as source text.

    A module is a name an ``import`` binds, ``sys.modules[...]``, a call of :data:`MODULE_LOADERS`,
    or a name bound (by assignment, ``for``, ``with`` or a comprehension, followed to a fixed point)
    to one of these or to a container of them. Flagged: ``setattr(<module>, ...)``, ``delattr``,
    and ``<module>.attr = ...`` (plain, augmented or annotated). Attributes of other objects are not.
    """
    tree = ast.parse(source)
    modules = {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree)
               if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names}
    pairs = _bindings(tree)
    while True:
        bound = {n.id for target, value in pairs if _module_valued(value, modules)
                 for n in ast.walk(target) if isinstance(n, ast.Name)} - modules
        if not bound:
            break
        modules |= bound
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("setattr", "delattr")
                and node.args and _module_valued(node.args[0], modules)):
            found.append(ast.unparse(node))
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        found += [ast.unparse(node) for t in targets
                  if isinstance(t, ast.Attribute) and _module_valued(t.value, modules)]
    return found


SWAP_FIXTURE = '''
import ast
import sys
from longdoc.local.lambda_runtime import load_handler

def serve(local):
    api = load_handler("api")
    seams = {api: local, **{sys.modules[name]: local for name in ("summary_routes",)}}
    for module, starter in seams.items():
        setattr(module, "_starter", lambda starter=starter: starter)
    load_handler("bulk").bulk_deps = None
'''


def test_the_module_assignment_check_finds_a_starter_swap() -> None:
    # Given the starter swap `longdoc serve` once did (handler modules through a dict, then setattr)
    found = module_attribute_assignments(SWAP_FIXTURE)
    # Then both assignments are found, and an ordinary object's attribute is not
    assert sorted(found) == ["load_handler('bulk').bulk_deps = None",
                             "setattr(module, '_starter', lambda starter=starter: starter)"]
    assert module_attribute_assignments("import os\n\ndef f(x):\n    x.attr = os.sep\n    setattr(x, 'a', 1)\n") == []


def test_no_module_assigns_attributes_of_another_module(graph: dict[str, import_graph.Module]) -> None:
    # Given every package module and handler file
    paths = [m.path for m in graph.values()] + handler_files()
    # When their statements are read for assignments to a module's attributes
    found = {str(p.relative_to(REPO)): hits for p in paths
             if (hits := module_attribute_assignments(p.read_text(encoding="utf-8")))}
    # Then there is none (local mode composes its own adapters: longdoc.wiring.overrides)
    assert found == {}
