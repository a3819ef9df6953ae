"""The Python packages import one another without circles: every import, at module level or inside a function,
is an edge; a strongly connected group of more than one module is a circle (docs/architecture.md, Python packages)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("echo",)  # one top-level package: the roles (echo/collectors) and the server (echo/server) inside


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports (a name imported from a package counts as its submodule when
    one of that name exists)."""
    files = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
             if "migrations" not in p.parts}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + [base]).strip(".")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            graph[mod] |= {t for t in targets if t in files and t != mod}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_the_imports() -> None:
    graph = import_graph()
    assert "echo.runformat.runfiles" in graph["echo.launch"]
    assert "echo.store.ingest" in graph["echo.server.upload"]


def test_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_the_client_does_not_import_the_server() -> None:
    """echorun packs and sends a run without the server's code; only the command line starts the server."""
    graph = import_graph()
    up = {m: sorted(t for t in deps if in_package(t, "echo.server")) for m, deps in graph.items()
          if not in_package(m, "echo.server") and m != "echo.cli"}
    assert {m: deps for m, deps in up.items() if deps} == {}


# docs/architecture.md's table of layers (Python packages): a module imports only modules of its layer or below
LAYERS = {
    -1: ("echo.runformat",),  # the run format: below everything, importing nothing else of echo
    0: ("echo", "echo.store", "echo.resources", "echo.store.models", "echo.placement", "echo.progress",
        "echo.reliability", "echo.slurm", "echo.tables", "echo.charts", "echo.userdocs", "echo.families"),
    1: ("echo.sdc", "echo.hostload", "echo.jobstop", "echo.store.db", "echo.uploads", "echo.lib"),
    2: ("echo.perf", "echo.modes", "echo.reinit", "echo.injections", "echo.fileview", "echo.collectors"),
    3: ("echo.build", "echo.plan", "echo.store.ingest", "echo.export", "echo.report"),
    4: ("echo.launch",),
    5: ("echo.server",),
    6: ("echo.cli", "echo.__main__"),
}


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer(module: str) -> int | None:
    """The layer of a module: its own entry, else its package's (echo.collectors.papi is in echo.collectors')."""
    for name in (module, *[module.rsplit(".", k)[0] for k in range(1, module.count(".") + 1)]):
        for level, names in LAYERS.items():
            if name in names:
                return level
    return None


def test_every_module_has_a_layer() -> None:
    assert [m for m in import_graph() if layer(m) is None] == []


def test_imports_go_down() -> None:
    up = [f"{m} (layer {layer(m)}) imports {d} (layer {layer(d)})" for m, deps in sorted(import_graph().items())
          for d in sorted(deps) if (layer(d) or 0) > (layer(m) or 0)]
    assert up == []


def test_the_run_format_is_the_bottom() -> None:
    """echo.runformat imports nothing of echo outside itself; the roles reach the run format there, never through the
    modules of planning and launching (the arrows of the packages all point down)."""
    graph = import_graph()
    assert {m: sorted(d for d in deps if not in_package(d, "echo.runformat")) for m, deps in graph.items()
            if in_package(m, "echo.runformat") and any(not in_package(d, "echo.runformat") for d in deps)} == {}
    assert any(in_package(d, "echo.runformat") for m, deps in graph.items() if in_package(m, "echo.collectors")
               for d in deps)


def role_modules() -> set[str]:
    """The registered roles' packages (echo.collectors.papi, ...): each role's folder."""
    from echo.collectors import roles

    return {role.__name__ for role in roles.ROLES}


def test_echo_and_server_import_no_role() -> None:
    """echo/ and echo/server/ reach a role only through the registry (echo/collectors/roles.py), never by importing it:
    a role is its folder and its registry line (docs/architecture.md)."""
    named = role_modules()
    graph = import_graph()
    found = {m: sorted(d for d in deps if any(in_package(d, r) for r in named))
             for m, deps in graph.items() if not in_package(m, "echo.collectors")}
    assert {m: deps for m, deps in found.items() if deps} == {}


def role_words() -> dict[str, list[str]]:
    """What names a role in code, per role: its name, its event kinds and the prefixes of the metrics its own
    sections show (echo/collectors/role.py's Role)."""
    from echo.collectors import roles

    return {role.name: [role.name, *role.events, *role.pages.apart] for role in roles.declared()}


# the run directory's format has one owner, which names every file of a run (its docstrings give the tools' as examples)
NAMES_FILES_OF_ROLES = ("echo/runformat/runfiles.py",)


def named_roles(paths: list[Path]) -> list[str]:
    """Where an identifier or string of the code (docstrings aside: they may give examples) names a role, one of
    its event kinds or its metrics."""
    import re

    words = role_words()
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value
            elif isinstance(node, ast.Name):
                text = node.id
            elif isinstance(node, ast.Attribute):
                text = node.attr
            else:
                continue
            for role, names in words.items():
                for name in names:
                    # a prefix ("papi ") names the role wherever it is; a word ("papi", "memcheck") as a whole word
                    hit = name in text if " " in name else \
                        re.search(rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])", text, re.IGNORECASE)
                    if hit:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r} names {role}")
    return found


def test_the_server_names_no_role() -> None:
    """No identifier or string of echo/server/ names a role: its pages, queries and routes iterate the registry."""
    assert named_roles(sorted((ROOT / "echo" / "server").rglob("*.py"))) == []


def test_echo_names_no_role() -> None:
    """Nor does echo/ (its migrations aside: they are history), but for the owner of the run directory's format."""
    paths = [p for p in sorted((ROOT / "echo").rglob("*.py")) if "migrations" not in p.parts
             and str(p.relative_to(ROOT)) not in NAMES_FILES_OF_ROLES and COLLECTORS not in p.parents]
    assert named_roles(paths) == []


# the modes' package: the one place that tests which mode a run is in (docs/architecture.md, "A new mode")
MODES_PACKAGE = ROOT / "echo" / "modes"
COLLECTORS = ROOT / "echo" / "collectors"  # the roles' package: each role names itself


def names_one(node: ast.AST, names: set[str] | tuple[str, ...]) -> bool:
    """Whether `node` is a constant among `names`, or a tuple, list or set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in names
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(names_one(e, names) for e in node.elts)


def flagged(paths: list[Path], hit: Callable[[ast.AST], bool]) -> list[str]:
    """"path:line: code" of every node of the files `paths` for which `hit` holds."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if hit(node):
                where = path.relative_to(ROOT) if ROOT in path.parents else path
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def mode_branches(paths: list[Path]) -> list[str]:
    """Where the code compares a mode with a mode's name: a comparison of a mode (`opts.mode`, `run.mode`, `mode`)
    with a mode's name or a tuple, list or set holding one, as `opts.mode == "sdr"` and `mode in ("sdr", "reinit")`
    do. Data that only carries the mode (run.json's "mode", the store's column, a query's filter by the mode a user
    asked for) is no branch, nor an event kind that shares a mode's name."""
    from echo import modes

    def is_mode(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "mode") or (isinstance(node, ast.Name)
                                                                               and node.id == "mode")

    def branch(node: ast.AST) -> bool:
        sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
        return any(map(is_mode, sides)) and any(names_one(side, modes.NAMES) for side in sides)

    return flagged(paths, branch)


def test_the_check_sees_a_mode_branch(tmp_path: Path) -> None:
    code = tmp_path / "branches.py"
    code.write_text('if opts.mode == "sdr":\n    pass\nreplicated = mode in ("sdr", "reinit")\n'
                    'stopped = opts.sdc == "stop"\nmeta = {"mode": opts.mode}\nasked = Run.mode == mode\n'
                    'repaired = e.kind == "reinit"\n')
    assert [line.split(": ", 1)[1] for line in mode_branches([code])] == [
        "opts.mode == 'sdr'", "mode in ('sdr', 'reinit')"]


def test_no_mode_branch_outside_the_modes() -> None:
    """echo/, echo/collectors/ and echo/server/ ask the run's mode object (echo/modes/: its plan lines, copies,
    relaunch, verdict, what the pages call its processes) and never test which mode it is: a new mode is its module and
    its registry line. The store's migrations are history."""
    paths = [p for p in sorted((ROOT / "echo").rglob("*.py"))
             if "migrations" not in p.parts and MODES_PACKAGE not in p.parents]
    assert mode_branches(paths) == []
