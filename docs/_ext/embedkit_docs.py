"""The pages the docs build generates, so they never fall behind the code or the results files.

At each build (Sphinx's ``builder-inited``), before any page is read, this writes:

- ``docs/api/``: the API reference. Every public class and function is documented once, under
  the name a user imports it by (``embedkit.GloveEmbedder``, not its defining module): the
  top-level names on a page each, the others on their module's page, which also lists (and
  links) everything the module exports. The objects are found by walking the
  package: the names of ``embedkit``, ``embedkit.representations`` and ``embedkit.heads``, then
  every module whose path has no ``_`` part (its ``__all__``, or the classes and functions it
  defines). A new class is in the reference the next time the docs are built.
- ``docs/cli.md``: ``embedkit COMMAND --help`` for every command, as the command prints it.
- ``docs/tuning-settings.md``: every number the tuning search decides by, from the source.
- ``docs/benchmarks/``: one page per ``pipelines/benchmarks/results/*.md`` (a new results file
  appears without editing anything here), with its chart and CSV, and the script that made it.
- ``docs/notebooks/``: the course notebooks as committed, with their outputs (not executed).

Files are rewritten only when their text changes, so an unchanged page is not rebuilt.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
BENCHMARKS = ROOT / "pipelines" / "benchmarks"
RESULTS = BENCHMARKS / "results"
NOTEBOOKS = ROOT / "notebooks"

#: the namespaces a user imports from, shown first in the reference
NAMESPACES = ("embedkit", "embedkit.representations", "embedkit.heads")
#: documented on a page of its own (docs/cli.md), from the commands' help
CLI_MODULE = "embedkit.cli"
#: benchmark pages shown first, in this order; any other results file follows, by name
BENCHMARK_ORDER = ("accuracy_suite", "speed", "tune_budget", "few_labels")
#: a results page the guide links to, written as a placeholder until its results exist
EXPECTED_RESULTS = {"bench_gpu": (
    "GPU benchmarks",
    "No GPU measurements are recorded yet. On a machine with a CUDA GPU, "
    "`python pipelines/benchmarks/bench_gpu.py` measures them and writes "
    "`pipelines/benchmarks/results/bench_gpu.md`, which then replaces this page.")}


def write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it already holds exactly that."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_bytes() != source.read_bytes():
        shutil.copyfile(source, target)


def _title(text: str, char: str = "=") -> str:
    return f"{text}\n{char * len(text)}\n"


def summary(obj) -> str:
    """The first paragraph of an object's docstring (its summary), on one line."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


# ----------------------------------------------------------------------------------------------
# the API inventory
# ----------------------------------------------------------------------------------------------


@dataclass
class Module:
    name: str
    summary: str
    #: (name in this module, documented name, kind) per public object, in order
    members: list[tuple[str, str, str]] = field(default_factory=list)


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    if inspect.ismodule(obj):
        return "module"
    return "data"


def public_modules() -> list[str]:
    """Every module of the package whose dotted path has no ``_`` part, namespaces first."""
    import embedkit

    found = [m.name for m in pkgutil.walk_packages(embedkit.__path__, "embedkit.")
             if not any(p.startswith("_") for p in m.name.split("."))]
    rest = sorted(m for m in found if m not in NAMESPACES and m != CLI_MODULE)
    return list(NAMESPACES) + rest


def public_names(module) -> list[str]:
    """``__all__``, or the public classes and functions the module itself defines."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [n for n, obj in vars(module).items()
            if not n.startswith("_") and _kind(obj) in ("class", "function", "exception")
            and getattr(obj, "__module__", None) == module.__name__]


def inventory() -> tuple[list[Module], dict[str, tuple[str, object]]]:
    """The reference's modules, and each documented object: name -> (kind, object).

    A class or function is documented once, under the first name it has in `public_modules`'
    order (so ``embedkit.GloveEmbedder``, not ``embedkit.representations.GloveEmbedder``); the
    other modules that export it link to that page. Data (constants, tables) is documented on
    its module's page.
    """
    modules, objects, seen = [], {}, {}
    for name in public_modules():
        module = importlib.import_module(name)
        entry = Module(name, summary(module))
        for member in public_names(module):
            obj = getattr(module, member)
            kind = _kind(obj)
            if kind == "module":
                continue
            if kind == "data":
                documented = f"{name}.{member}"
            else:
                documented = seen.setdefault(id(obj), f"{name}.{member}")
            objects.setdefault(documented, (kind, obj))
            entry.members.append((member, documented, kind))
        modules.append(entry)
    return modules, objects


def _autodoc(name: str, kind: str) -> str:
    """The autodoc directive of one object, ``name`` relative to the current module."""
    if kind == "function":
        return f".. autofunction:: {name}\n"
    directive = "autoexception" if kind == "exception" else "autoclass"
    return f".. {directive}:: {name}\n   :members:\n   :inherited-members:\n"


def _object_page(documented: str, kind: str) -> str:
    """A page of its own, for a name of the top-level ``embedkit`` namespace."""
    module, _, name = documented.rpartition(".")
    return _title(documented) + f"\n.. currentmodule:: {module}\n\n" + _autodoc(name, kind)


def _own_page(documented: str) -> bool:
    return documented.rpartition(".")[0] == "embedkit"


def _value_is_short(obj) -> bool:
    return len(repr(obj)) <= 60


def _module_page(module: Module) -> str:
    """The module's docstring, a table of everything it exports (linked to where each is
    documented), then the classes and functions documented under its name, then its data."""
    lines = [_title(module.name), f".. automodule:: {module.name}\n"]
    own_pages = [documented for _, documented, kind in module.members
                 if kind != "data" and _own_page(documented) and module.name == "embedkit"]
    if own_pages:  # the top level's names have a page each
        lines += [".. toctree::", "   :hidden:", ""] + [f"   {d}" for d in own_pages] + [""]
    objects = [m for m in module.members if m[2] != "data"]
    here = [(member, kind) for member, documented, kind in objects
            if documented == f"{module.name}.{member}" and not _own_page(documented)]
    data = [m for m in module.members if m[2] == "data"]
    if objects:
        lines += [_title("Contents", "-"), ".. list-table::", "   :widths: 35 65", ""]
        for member, documented, _ in objects:
            shown = f"{module.name}.{member}"
            ref = f":py:obj:`{member} <{documented}>`"
            also = "" if shown == documented else f" (``{documented}``)"
            lines += [f"   * - {ref}", f"     - {_escape(summary(_resolve(documented))) or ' '}{also}"]
        lines.append("")
    for heading, kinds in (("Classes", ("class", "exception")), ("Functions", ("function",))):
        documented_here = [(member, kind) for member, kind in here if kind in kinds]
        if documented_here:
            lines += [_title(heading, "-"), f".. currentmodule:: {module.name}\n"]
            lines += [_autodoc(member, kind) for member, kind in documented_here]
    if data:
        lines += [_title("Constants and tables", "-"), f".. currentmodule:: {module.name}\n"]
        for member, _, _ in data:
            value = getattr(importlib.import_module(module.name), member)
            option = "" if _value_is_short(value) else "   :no-value:\n"
            lines.append(f".. autodata:: {member}\n{option}")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    """A summary line inside a table cell or list item: ``*`` and ``|`` escaped, so only its
    backquoted names are markup (references, under the default role)."""
    return text.replace("*", r"\*").replace("|", r"\|")


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _api_index(modules: list[Module]) -> str:
    intro = (
        "Every public class and function, from its docstring. The classes a pipeline is made of "
        "are imported from the top level (``from embedkit import GloveEmbedder, MLPClassifier``); "
        "the modules below hold the rest. The command line is in :doc:`../cli`.\n")
    lines = [_title("API reference"), intro, ".. toctree::", "   :hidden:", ""]
    lines += [f"   {m.name}" for m in modules]
    lines.append("")
    for module in modules:
        lines += [_title(module.name, "-"), f"{_escape(module.summary)} :doc:`More <{module.name}>`.\n"]
        members = [m for m in module.members if m[2] != "data"]
        groups = {}
        for member, documented, _ in members:
            area = _area(_resolve(documented)) if module.name == "embedkit" else ""
            groups.setdefault(area, []).append((member, documented))
        for area in sorted(groups, key=lambda a: (_AREAS.index(a) if a in _AREAS else len(_AREAS), a)):
            if area:
                lines += [f"**{area}**", ""]
            lines += [f"- :py:obj:`{module.name}.{member} <{documented}>`: "
                      f"{_escape(summary(_resolve(documented)))}" for member, documented in groups[area]]
            lines.append("")
    return "\n".join(lines)


#: how the top level's names are grouped in the reference's index, by the module defining them
_AREA_OF = {"embedkit.representations": "Representations", "embedkit.heads": "Heads",
            "embedkit.data.documents": "Texts, datasets and containers",
            "embedkit.sequences": "Texts, datasets and containers",
            "embedkit.data.datasets": "Texts, datasets and containers",
            "embedkit.data.reading": "Texts, datasets and containers", "embedkit.vectors": "Word vectors",
            "embedkit.storage.persist": "Saving, loading and predicting",
            "embedkit.streaming": "Saving, loading and predicting", "embedkit.tuning": "Tuning",
            "embedkit.explain": "Explaining and charts", "embedkit.plots": "Explaining and charts",
            "embedkit.distributed": "Dask"}
_AREAS = list(dict.fromkeys(_AREA_OF.values()))


def _area(obj) -> str:
    module = getattr(obj, "__module__", "") or ""
    return next((area for prefix, area in _AREA_OF.items()
                 if module == prefix or module.startswith(prefix + ".")), "Other")


def write_api(out: Path) -> None:
    modules, objects = inventory()
    pages = {f"{m.name}.rst": _module_page(m) for m in modules}
    pages.update({f"{name}.rst": _object_page(name, kind) for name, (kind, _) in objects.items()
                  if kind != "data" and _own_page(name)})
    pages["index.rst"] = _api_index(modules)
    for stale in out.glob("*.rst") if out.exists() else []:
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        write(out / name, text)


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------


def _commands(group, prefix=()):
    import click

    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def write_cli(path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from embedkit.cli import app

    runner = CliRunner()
    env = {"COLUMNS": "88", "NO_COLOR": "1", "TERM": "dumb"}  # fits the page's code column

    def helptext(args):
        result = runner.invoke(app, [*args, "--help"], env=env, prog_name="embedkit")
        if result.exit_code != 0:
            raise RuntimeError(f"`embedkit {' '.join(args)} --help` failed: {result.output}")
        return "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())

    listing = runner.invoke(app, ["compare", "--list"], env=env, prog_name="embedkit")
    if listing.exit_code != 0:
        raise RuntimeError(f"`embedkit compare --list` failed: {listing.output}")
    parts = [
        "# Command line\n",
        "`embedkit` is installed with the package; from a checkout, `./run.sh embedkit ARGS` runs "
        "it inside the project's environment (relative paths are read from the folder you run "
        "it in). Each section below is the command's own `--help`, as it prints it; the "
        "conventions every command shares are in "
        "[Comparing and tuning](guide/comparing-and-tuning.md#command-line-conventions).\n",
        "## embedkit\n", "```text", helptext([]), "```\n"]
    for names, _ in _commands(typer.main.get_command(app)):
        parts += [f"## embedkit {' '.join(names)}\n", "```text", helptext(list(names)), "```\n"]
    parts += ["## The names: `embedkit compare --list`\n",
              "The registry's representations (with the output each gives) and heads (with the "
              "outputs each reads), the baselines and the built-in experiments:\n",
              "```text", listing.output.rstrip(), "```\n"]
    write(path, "\n".join(parts))


# ----------------------------------------------------------------------------------------------
# the tuning search's settings
# ----------------------------------------------------------------------------------------------
#: the modules whose documented constants the search decides by: its own, then those the lower
#: layers own (the layers the search may read, never the reverse)
SETTINGS = (("embedkit/tuning/_settings.py", None),
            ("embedkit/_budget.py", {"DECIDING"}),
            ("embedkit/storage/outputs.py", {"WRITE_SECONDS", "WRITE_RATE"}),
            ("embedkit/data/documents.py", {"MAX_DOCUMENT_CHARS", "CHARS_PER_TOKEN"}),
            ("embedkit/heads/finetune/sizing.py", {"FORWARD_SHARE", "REFERENCE_LENGTH",
                                                    "SHORT_LENGTH", "MIN_ROWS", "WORK_EXPONENT",
                                                    "ROWS_PER_CLASS"}),
            ("embedkit/heads/setfit.py", {"LEAST_STEPS"}))


def documented_constants(path: Path, names=None) -> list[tuple[list[str], str, str]]:
    """``(names, value, comment)`` of every module-level assignment of ``path`` that a ``#:``
    comment documents (of ``names`` only, where given), in the file's order."""
    import ast

    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    out = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        targets = node.targets[0]
        found = [t.id for t in (targets.elts if isinstance(targets, ast.Tuple) else [targets])
                 if isinstance(t, ast.Name)]
        if not found or (names is not None and not set(found) & names):
            continue
        comment, i = [], node.lineno - 2
        while i >= 0 and lines[i].lstrip().startswith("#:"):
            comment.insert(0, lines[i].lstrip()[2:].strip())
            i -= 1
        if comment:
            value = " ".join(ast.get_source_segment(source, node.value).split())
            out.append((found, value, " ".join(comment)))
    return out


def write_settings(path: Path) -> None:
    """The tuning search's settings page: every constant it decides by, with its value and the
    comment that says where the value came from."""
    from embedkit.tuning._value import TIERS

    parts = ["# Tuning settings\n",
             "Every number `embedkit tune` decides by, named once in the code "
             "(`embedkit/tuning/_settings.py`, and the few a lower layer owns), with its value "
             "and where that value came from. Generated from the source at each build.\n",
             "## The tiers\n", "| tier | pair kinds | expected gain (points) | lane |",
             "|---|---|---:|---|"]
    parts += [f"| {t.name} | {', '.join(t.kinds)} | {t.gain:g} | {t.lane} |" for t in TIERS]
    for relative, names in SETTINGS:
        rows = documented_constants(ROOT / relative, names)
        if not rows:
            continue
        parts += ["", f"## `{relative}`\n", "| name | value | what it is, and where its value came from |",
                  "|---|---|---|"]
        for found, value, comment in rows:
            shown = value if len(value) <= 60 else value[:57] + "..."
            parts.append(f"| `{', '.join(found)}` | `{shown}` | {_escape(comment)} |")
    write(path, "\n".join(parts) + "\n")


# ----------------------------------------------------------------------------------------------
# benchmarks and notebooks
# ----------------------------------------------------------------------------------------------


def _first_heading(text: str) -> tuple[int, str] | None:
    match = re.search(r"^(#+)\s+(.*)$", text, flags=re.M)
    return (len(match.group(1)), match.group(2).strip()) if match else None


def benchmark_pages() -> dict[str, str]:
    """stem -> page title, for every results file (and the expected ones), in the shown order."""
    stems = sorted((p.stem for p in RESULTS.glob("*.md")),
                   key=lambda s: (BENCHMARK_ORDER.index(s) if s in BENCHMARK_ORDER
                                  else len(BENCHMARK_ORDER), s))
    titles = {}
    for stem in stems:
        heading = _first_heading((RESULTS / f"{stem}.md").read_text(encoding="utf-8"))
        titles[stem] = heading[1] if heading and heading[0] == 1 else stem.replace("_", " ")
    for stem, (title, _) in EXPECTED_RESULTS.items():
        titles.setdefault(stem, title)
    return titles


def _benchmark_page(stem: str, out: Path) -> str:
    source = RESULTS / f"{stem}.md"
    if not source.exists():
        title, text = EXPECTED_RESULTS[stem]
        return f"# {title}\n\n{text}\n"
    text = source.read_text(encoding="utf-8")
    heading = _first_heading(text)
    if not heading or heading[0] != 1:
        text = f"# {stem.replace('_', ' ')}\n\n" + text
    script = BENCHMARKS / f"{stem}.py"
    origin = f"Generated from `pipelines/benchmarks/results/{stem}.md`"
    if script.exists():
        origin += f", which `pipelines/benchmarks/{stem}.py` measures"
    extras = []
    for suffix in (".png", ".csv"):
        extra = RESULTS / f"{stem}{suffix}"
        if extra.exists():
            copy(extra, out / extra.name)
            if suffix == ".csv":
                extras.append(f"every row: {{download}}`{extra.name} <{extra.name}>`")
            elif f"]({extra.name})" not in text:
                text = text.rstrip("\n") + f"\n\n![{stem.replace('_', ' ')}]({extra.name})\n"
    origin += (" (" + "; ".join(extras) + ")" if extras else "") + "; the commands are in the text."
    # the note goes right under the page title
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("# "))
    lines[first + 1:first + 1] = ["", f"*{origin}*"]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_benchmarks(out: Path) -> None:
    titles = benchmark_pages()
    pages = {f"{stem}.md": _benchmark_page(stem, out) for stem in titles}
    toc = "\n".join(titles)
    listing = "\n".join(
        f"- [{title}]({stem}.md)" + (f": `pipelines/benchmarks/{stem}.py`"
                                     if (BENCHMARKS / f"{stem}.py").exists() else "")
        for stem, title in titles.items())
    pages["index.md"] = (
        "# Benchmarks\n\n"
        "Every figure the README and this manual quote comes from one of these pages; each names "
        "the command that measured it, run from the checkout (`PYTHONPATH=. python "
        "pipelines/benchmarks/<name>.py`). They are generated from "
        "`pipelines/benchmarks/results/`, so a new results file appears here at the next build. "
        "Absolute seconds depend on the machine (most were measured on a shared 2-core CPU); "
        "ratios measured side by side travel better.\n\n"
        f"```{{toctree}}\n:hidden:\n\n{toc}\n```\n\n{listing}\n")
    keep = set(pages) | {p.name for p in RESULTS.glob("*.png")} | {p.name for p in RESULTS.glob("*.csv")}
    for stale in out.iterdir() if out.exists() else []:
        if stale.is_file() and stale.name not in keep:
            stale.unlink()
    for name, text in pages.items():
        write(out / name, text)


def write_notebooks(out: Path) -> None:
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    for name in names:
        copy(NOTEBOOKS / name, out / name)
    for stale in out.glob("*.ipynb") if out.exists() else []:
        if stale.name not in names:
            stale.unlink()
    toc = "\n".join(Path(n).stem for n in names)
    write(out / "index.md", (
        "# Notebooks\n\n"
        "The course's experiments, as committed in `notebooks/` with their outputs (this site "
        "shows them; it does not run them). `python notebooks/build.py` writes and executes them "
        "on the full data; `./run.sh test` re-executes them on small slices so they never rot.\n\n"
        f"```{{toctree}}\n:maxdepth: 1\n\n{toc}\n```\n"))


def generate(app=None) -> None:
    write_api(DOCS / "api")
    write_cli(DOCS / "cli.md")
    write_settings(DOCS / "tuning-settings.md")
    write_benchmarks(DOCS / "benchmarks")
    write_notebooks(DOCS / "notebooks")


def _defined_outside(obj) -> bool:
    """Whether a class member comes from another library (scikit-learn's get_params,
    set_output, set_fit_request, ...): that library's reference documents it."""
    target = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    module = getattr(target, "__module__", None) or ""
    return not module.startswith("embedkit")


def skip_foreign_member(app, what, name, obj, skip, options):
    if what in ("class", "exception") and _defined_outside(obj):
        return True
    return None


#: numpydoc sections whose indentation is structure (a name line, then its description)
_FIELD_SECTIONS = {"parameters", "other parameters", "returns", "yields", "receives", "raises",
                   "warns", "attributes", "methods", "see also"}


def indented_code(app, what, name, obj, options, lines) -> None:
    """Show a docstring's indented example (a command or code under a prose line, the house
    style of module docstrings) as a literal block, as a reader of the source sees it.

    In reStructuredText such a block is a quotation whose text is markup, so ``tuner.result_``
    in it would be a broken link; a lone ``::`` paragraph before it makes it literal and is
    itself dropped from the page. Blocks in field sections (Parameters, Returns, ...), doctest
    blocks, a directive's content and blocks already introduced by ``::`` are left as they are.
    """
    section, out, i = "", [], 0

    def indent(line):
        return len(line) - len(line.lstrip())

    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}:
            section = line.strip().lower()
        previous = next((p for p in reversed(out) if p.strip()), None)
        starts_block = (
            line.strip() and previous is not None and indent(line) > indent(previous)
            and section not in _FIELD_SECTIONS and not previous.rstrip().endswith("::")
            and not previous.lstrip().startswith("..")  # a directive's own content
            and not line.lstrip().startswith(">>>")
            and (not out[-1].strip() or set(previous.strip()) == {"-"}))
        if not starts_block:
            out.append(line)
            i += 1
            continue
        base = indent(previous)
        if out[-1].strip():
            out.append("")
        out += [" " * base + "::", ""]
        while i < len(lines) and (not lines[i].strip() or indent(lines[i]) > base):
            out.append(lines[i])
            i += 1
        if out[-1].strip():
            out.append("")
    lines[:] = out


def no_borrowed_docstring(app, what, name, obj, options, lines) -> None:
    """A constant without a ``#:`` comment of its own gets no text, not its type's docstring
    (``str``'s "Create a new string object ...")."""
    if what in ("data", "attribute") and lines:
        borrowed = inspect.getdoc(type(obj)) or ""
        if " ".join("\n".join(lines).split()) == " ".join(borrowed.split()):
            lines[:] = []


def unresolved_in_pages(app, env, node, contnode):
    """A hand-written page's reference to the API that resolves to nothing is a warning (so an
    error in the build): a renamed class must not leave the guide pointing nowhere. Docstrings
    (the ``api/`` pages) may name private helpers, which are shown as plain code."""
    from sphinx.util import logging

    if node.get("refdomain") == "py" and not node.get("refdoc", "").startswith(("api/", "notebooks/")):
        logging.getLogger(__name__).warning(
            "%s reference %r resolves to no documented object", node.get("reftype"),
            node.get("reftarget"), location=node)


def setup(app):
    app.connect("missing-reference", unresolved_in_pages)
    app.connect("autodoc-process-docstring", no_borrowed_docstring)
    # before numpydoc (priority 500) turns the sections into reStructuredText
    app.connect("autodoc-process-docstring", indented_code, priority=400)
    app.connect("builder-inited", generate)
    app.connect("autodoc-skip-member", skip_foreign_member)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
