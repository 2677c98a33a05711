"""Print the shape of the tensoropt package's import graph, read from the AST.

Usage::

    python scripts/import_graph.py            # measures ./tensoropt
    python scripts/import_graph.py --root DIR --package tensoropt

It prints four figures (the ones issue 13 asks for before and after the
restructuring):

- the import circles among the package's modules, top-level AND
  function-level imports counted as edges (one line per strongly connected
  component of more than one module, or a module importing itself);
- the number of function-level imports of the package's own modules (and of
  the numpy-only leaves ``frontier`` and ``reschedule``), with where they are;
- the largest module (lines);
- the longest parameter list (function and count).

Nothing is imported or run: the files are only parsed.
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ImportEdge", "main", "module_name", "read_edges", "strongly_connected"]

OWN_PACKAGES = ("tensoropt", "frontier", "reschedule")


@dataclass(frozen=True)
class ImportEdge:
    """One import statement that names a module of the package.

    Attributes:
        source: the importing module (dotted name).
        target: the imported module (dotted name, resolved to a module file).
        function_level: True when the import sits inside a function body.
        line: the line number of the import.
    """

    source: str
    target: str
    function_level: bool
    line: int


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of ``path`` relative to ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of ``name`` that is a known module."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts = parts[:-1]
    return None


def _absolute(node: ast.ImportFrom, source: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _in_function(tree: ast.AST) -> dict[int, bool]:
    """Map id(import node) -> whether it is inside a function body."""
    inside: dict[int, bool] = {}

    def visit(node: ast.AST, in_func: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                inside[id(child)] = in_func
            func = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, in_func or func)

    visit(tree, False)
    return inside


def read_edges(root: Path, package: str) -> tuple[list[ImportEdge], dict[str, int], list]:
    """Parse every module of ``package`` (and the own leaves) under ``root``.

    Returns:
        (edges, line count per module of ``package``, parameter lists as
        (count, "module:function") pairs).
    """
    files: dict[str, Path] = {}
    for own in OWN_PACKAGES:
        for path in sorted((root / own).rglob("*.py")):
            files[module_name(path, root)] = path
    modules = set(files)
    edges: list[ImportEdge] = []
    lines: dict[str, int] = {}
    params: list[tuple[int, str]] = []
    for name, path in files.items():
        if not name.startswith(package):
            continue
        text = path.read_text()
        lines[name] = len(text.splitlines())
        tree = ast.parse(text)
        inside = _in_function(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                count += bool(a.vararg) + bool(a.kwarg)
                if a.args and a.args[0].arg in ("self", "cls"):
                    count -= 1
                # the rule: at most 8 parameters, beyond which they are keyword-only with defaults
                bare = count - sum(d is not None for d in a.kw_defaults)
                params.append((count, f"{name}:{node.name}", bare))
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, is_package)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved is None or resolved == name:
                    continue
                edges.append(ImportEdge(name, resolved, inside[id(node)], node.lineno))
    return edges, lines, params


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of size > 1."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="folder holding the packages")
    parser.add_argument("--package", default="tensoropt")
    parser.add_argument("--verbose", action="store_true",
                        help="list every function-level import")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    edges, lines, params = read_edges(root, args.package)
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.target.startswith(args.package):
            graph.setdefault(e.source, set()).add(e.target)
    circles = strongly_connected(graph)
    print(f"import circles among {args.package} modules "
          f"(top-level and function-level edges): {len(circles)}")
    for comp in circles:
        print("  " + " <-> ".join(comp))
    # One statement ("from x import a, b") counts once.
    local = sorted({(e.source, e.line): e for e in edges if e.function_level}.values(),
                   key=lambda e: (e.source, e.line))
    print(f"function-level import statements of the project's own modules: {len(local)}")
    if args.verbose:
        for e in local:
            print(f"  {e.source}:{e.line} -> {e.target}")
    biggest = max(lines.items(), key=lambda kv: kv[1])
    print(f"largest module: {biggest[0]} ({biggest[1]} lines)")
    over = sorted((n for n in lines.items() if n[1] > 400), key=lambda kv: -kv[1])
    print(f"modules over 400 lines: {', '.join(f'{m} ({n})' for m, n in over) or 'none'}")
    longest = max(params)
    print(f"longest parameter list: {longest[1]} ({longest[0]} parameters)")
    over = sorted((p for p in params if p[2] > 8), reverse=True)
    print("functions over 8 parameters that are not keyword-only with defaults: "
          + (", ".join(f"{n} ({c})" for c, n, _ in over) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
