"""The import graph of the ``longdoc`` package, read from the source with :mod:`ast` (nothing is imported).

Every ``import`` and ``from ... import`` statement counts, wherever it is: module level or
inside a function (the lazy imports that keep cold starts short). Imports under
``if TYPE_CHECKING:`` are kept apart (``type_imports``, marked ``(t)`` in the module list) but
count like the others, for the direction of the layers and as cycles: a circle through a
type-checking import is still a coupling (issue 24). An edge goes to the deepest ``longdoc`` module the statement names
(``from longdoc.core import tokens`` -> ``longdoc.core.tokens``; ``from longdoc.core.models
import Chunk`` -> ``longdoc.core.models``). The implicit import of parent packages is not an
edge. A module belongs to a *component*: its first two name parts (``longdoc.ingest``,
``longdoc.wiring``); the package graph joins module edges between components.

Usage: ``python scripts/import_graph.py [--root layers/longdoc/longdoc] [--mermaid] [--table] [--modules]``
(no flag: all three, as Markdown ready to paste into ``docs/architecture.md``). Exits 1 and
names the cycle when the module graph has one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_ROOT = REPO / "layers" / "longdoc" / "longdoc"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("longdoc.cli", "longdoc.local", "longdoc.eval", "longdoc.mcpserver"),
    ("longdoc.wiring",),
    ("longdoc.adapters",),
    ("longdoc.triage", "longdoc.bulk", "longdoc.summarize", "longdoc.review"),
    ("longdoc.ingest", "longdoc.extract"),
    ("longdoc.search",),
    ("longdoc.core", "longdoc.config", "longdoc.observability", "longdoc.data"),
)
"""Components from top to bottom, as the Mermaid diagram ranks them (an arrow should point down).

``triage``, ``bulk`` and ``summarize`` sit above the pipelines they build on and
below the adapters. ``search`` (BM25 with word pairs, rank fusion, the quote finder) is the
shared retrieval machinery below every stage, just above ``core``. ``config`` (settings) and ``observability`` (Powertools logger) sit beside ``core`` at the
bottom: they import nothing else from the package. A component not listed is drawn on its own row.
"""


@dataclass
class Module:
    """One module of the package: dotted ``name``, ``path``, line count, first docstring line, imports.

    ``imports`` holds dotted names of package modules this module imports at run time (never
    itself); ``type_imports`` those imported only under ``if TYPE_CHECKING:``.
    """

    name: str
    path: Path
    lines: int
    purpose: str
    is_package: bool
    imports: set[str] = field(default_factory=set)
    type_imports: set[str] = field(default_factory=set)

    @property
    def all_imports(self) -> set[str]:
        """Run-time and typing-only imports together."""
        return self.imports | self.type_imports

    @property
    def component(self) -> str:
        """The first two parts of the name (``longdoc.ingest`` for ``longdoc.ingest.chunk``)."""
        return ".".join(self.name.split(".")[:2])


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of the module at ``path`` under package ``root`` and whether it is a package (``__init__``)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _purpose(tree: ast.Module) -> str:
    """First line of the module docstring, or ``""``."""
    doc = ast.get_docstring(tree)
    return doc.strip().splitlines()[0].strip() if doc else ""


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute dotted name an ``ImportFrom`` reads from (resolves ``from . import x``)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _resolve(name: str, known: Container[str]) -> str | None:
    """The deepest known module that ``name`` is, or is inside (``None`` outside the package)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _parse(source: str, path: Path, attempts: int = 3) -> ast.Module:
    """``ast.parse`` retried on CPython 3.11's spurious ``SystemError: AST constructor recursion depth
    mismatch`` (CPython issue gh-106905: the depth counter is shared by threads, so a parse in another
    thread of the test process can trip it; fixed in later releases). Raises ``SyntaxError`` as parse does."""
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=str(path))
        except SystemError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def build_graph(root: Path = PACKAGE_ROOT) -> dict[str, Module]:
    """Parse every ``*.py`` under ``root``; return modules by dotted name, with their package imports.

    An ``ImportFrom`` adds an edge to its source module only when none of its names is a
    module itself (``from longdoc.core import tokens`` is an edge to ``longdoc.core.tokens`` alone).
    Raises ``SyntaxError`` for a file that does not parse.
    """
    modules: dict[str, Module] = {}
    trees: dict[str, ast.Module] = {}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name, is_package = module_name(path, root)
        trees[name] = _parse(source, path)
        modules[name] = Module(name, path, len(source.splitlines()), _purpose(trees[name]), is_package)
    for name, tree in trees.items():
        module = modules[name]
        typing_only = _typing_only_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                target = module.type_imports if id(node) in typing_only else module.imports
                target |= _edges(node, module, modules)
        module.imports.discard(name)
        module.type_imports -= module.imports | {name}
    return modules


def _typing_only_nodes(tree: ast.AST) -> set[int]:
    """``id()`` of every node inside the body of an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            inside |= {id(child) for statement in node.body for child in ast.walk(statement)}
    return inside


def _edges(node: ast.Import | ast.ImportFrom, module: Module, modules: dict[str, Module]) -> set[str]:
    """The package modules one import statement makes ``module`` depend on."""
    if isinstance(node, ast.Import):
        targets = (_resolve(alias.name, modules) for alias in node.names)
        return {t for t in targets if t}
    source = _absolute(node, module.name, module.is_package)
    submodules = {f"{source}.{alias.name}" for alias in node.names} & modules.keys()
    if submodules:
        return submodules
    target = _resolve(source, modules)
    return {target} if target else set()


def reachable(modules: dict[str, Module], start: str, typing: bool = True) -> set[str]:
    """Every module ``start`` imports directly or through others (``start`` itself only via a cycle).

    ``typing``: follow ``TYPE_CHECKING`` imports too (False: run-time imports only).
    """
    def targets(name: str) -> set[str]:
        return modules[name].all_imports if typing else modules[name].imports

    seen: set[str] = set()
    todo = list(targets(start))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(targets(name))
    return seen


def find_cycles(modules: dict[str, Module], typing: bool = True) -> list[list[str]]:
    """Import cycles as strongly connected groups of two or more modules, each sorted; the list sorted.

    Two modules share a group when each reaches the other (the package has about 50 modules,
    so a reachability set per module is cheap). ``TYPE_CHECKING`` imports count unless
    ``typing`` is False (run-time cycles only).
    """
    reach = {name: reachable(modules, name, typing) for name in modules}
    groups = {tuple(sorted({name} | {other for other in reach[name] if name in reach[other]})) for name in modules}
    return sorted(list(group) for group in groups if len(group) > 1)


def component_edges(modules: dict[str, Module]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``(from component, to component)`` -> the module edges behind it, for edges between components."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module in modules.values():
        for target in sorted(module.all_imports):
            pair = (module.component, modules[target].component)
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append((module.name, target))
    return dict(sorted(edges.items()))


def _node_id(component: str) -> str:
    return component.replace(".", "_")


def mermaid(modules: dict[str, Module]) -> str:
    """A Mermaid ``flowchart TD`` of the components, ranked by :data:`LAYERS`, one arrow per component edge.

    The label of an arrow is the number of module-to-module imports behind it.
    """
    components = sorted({m.component for m in modules.values()} - {"longdoc"})
    rows = [[c for c in layer if c in components] for layer in LAYERS]
    rows.append([c for c in components if not any(c in layer for layer in LAYERS)])
    lines = ["```mermaid", "flowchart TD"]
    for number, row in enumerate(r for r in rows if r):
        lines.append(f"    subgraph L{number}[\" \"]")
        lines += [f"        {_node_id(c)}[\"{c.removeprefix('longdoc.')}\"]" for c in row]
        lines.append("    end")
    for (source, target), behind in component_edges(modules).items():
        if "longdoc" in (source, target):
            continue
        lines.append(f"    {_node_id(source)} -->|{len(behind)}| {_node_id(target)}")
    lines.append("```")
    return "\n".join(lines)


def module_table(modules: dict[str, Module]) -> str:
    """A Markdown table ``module | lines | purpose`` (first docstring line), one row per module, by name."""
    lines = ["| module | lines | purpose |", "|---|---:|---|"]
    for module in sorted(modules.values(), key=lambda m: m.name):
        purpose = module.purpose.replace("|", "\\|")
        lines.append(f"| `{module.name}` | {module.lines} | {purpose} |")
    return "\n".join(lines)


def module_list(modules: dict[str, Module]) -> str:
    """Plain text: each module followed by the package modules it imports (typing-only ones marked ``(t)``)."""
    lines = []
    for module in sorted(modules.values(), key=lambda m: m.name):
        targets = ", ".join(sorted([t.removeprefix("longdoc.") for t in module.imports]
                                   + [t.removeprefix("longdoc.") + " (t)" for t in module.type_imports])) or "-"
        lines.append(f"{module.name.removeprefix('longdoc.') or 'longdoc'} -> {targets}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the requested views (all by default); return 1 when the module graph has a cycle."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=PACKAGE_ROOT, help="the package folder (default: %(default)s)")
    parser.add_argument("--mermaid", action="store_true", help="the component diagram (Mermaid)")
    parser.add_argument("--table", action="store_true", help="module | lines | purpose (Markdown)")
    parser.add_argument("--modules", action="store_true", help="each module and what it imports (text)")
    args = parser.parse_args(argv)
    modules = build_graph(args.root)
    everything = not (args.mermaid or args.table or args.modules)
    sections = []
    if everything or args.mermaid:
        sections.append(mermaid(modules))
    if everything or args.table:
        sections.append(module_table(modules))
    if everything or args.modules:
        sections.append("```text\n" + module_list(modules) + "\n```")
    print("\n\n".join(sections))
    cycles = find_cycles(modules)
    for cycle in cycles:
        print(f"import cycle: {' <-> '.join(cycle)}", file=sys.stderr)
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
