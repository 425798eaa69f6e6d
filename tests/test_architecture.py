"""docs/architecture.md stays in step with the package: every module named in exactly one layer,
every named module real, and no module importing from a layer above its own (imports inside
functions counted, with the same reading of imports as `test_layout.py`); in the search, one
owner of the engine's state."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from test_layout import PACKAGE, _imports_of

PAGE = Path(__file__).parents[1] / "docs" / "architecture.md"
ROOT = "embedkit"  # the package root re-exports lazily, by name: outside the layers


def _modules() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _layers() -> list[tuple[str, list[str]]]:
    """(layer heading, modules named in its table's first column), top layer first."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers = []
    for block in section.split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        names = []
        for row in body.splitlines():
            cells = row.split("|")
            if row.startswith("|") and len(cells) > 2:
                names += re.findall(r"`(embedkit(?:\.\w+)*)`", cells[1])
        layers.append((heading.strip(), names))
    return layers


def test_every_module_is_in_exactly_one_layer_and_every_named_module_exists():
    layers = _layers()
    assert [h for h, _ in layers][:2] == ["1. Command line", "2. Jobs"]  # the page was parsed
    named = [m for _, names in layers for m in names]
    modules = set(_modules()) - {ROOT}
    twice = sorted({m for m in named if named.count(m) > 1})
    assert not twice, f"docs/architecture.md names these modules in more than one row: {twice}"
    missing = sorted(modules - set(named))
    assert not missing, (f"docs/architecture.md has no row for {missing}: add each to the table of "
                         "its layer (## Layers), with what it owns")
    gone = sorted(set(named) - modules)
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_every_path_the_page_names_exists():
    text = PAGE.read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:embedkit|tests|pipelines|notebooks|docs)/[\w./<>-]*)`", text))
    assert "embedkit/base.py" in paths
    missing = sorted(p for p in paths if "<" not in p and not (PACKAGE.parent / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_no_module_imports_from_a_layer_above_its_own():
    files = _modules()
    layer = {m: i for i, (_, names) in enumerate(_layers()) for m in names}
    upward = []
    for module, path in files.items():
        if module == ROOT or module not in layer:
            continue  # a module without a row fails the test above
        for imported in _imports_of(path, module, set(files)):
            if imported != ROOT and imported in layer and layer[imported] < layer[module]:
                upward.append(f"{module} (layer {layer[module] + 1}) imports {imported} "
                              f"(layer {layer[imported] + 1})")
    assert not upward, ("imports against docs/architecture.md's layers: " + "; ".join(sorted(upward))
                        + ". Move the module to the layer it belongs to, or the import out.")


def test_in_the_search_only_the_engine_assigns_its_state():
    """`embedkit.tuning._engine.Search` alone assigns its attributes: the schedule, the plans, the
    finish and the rest of `embedkit.tuning` read the search they are handed (named ``s`` or
    ``search`` there, or held as ``self.search``), tell it through its methods, and keep what
    they decide on themselves (the finish's ``reserved_seeds``)."""
    written = []
    for path in sorted((PACKAGE / "tuning").glob("*.py")):
        if path.name == "_engine.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                       if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            written += [f"{path.name}:{node.lineno}: {ast.unparse(part)}"
                        for target in targets for part in ast.walk(target)
                        if isinstance(part, (ast.Attribute, ast.Subscript))
                        and ast.unparse(part).startswith(("s.", "search.", "self.search."))]
    assert not written, ("the engine's state assigned outside embedkit/tuning/_engine.py: "
                         + "; ".join(written) + ". Give the engine a method that records it, or "
                         "keep the state on the object that decides it.")


def _assigned(attribute: str) -> list[str]:
    """Where the package assigns ``<anything>.<attribute>``: ``file:line``."""
    return [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]
                           if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for part in ast.walk(target)
            if isinstance(part, ast.Attribute) and part.attr == attribute]


def test_a_candidates_outcome_is_recorded_by_the_engine_alone():
    """What came of a candidate is its `Outcome`, written by `embedkit.tuning._engine.Search`
    alone (a new record each time); the candidate shows it under the same names, which cannot be
    assigned; the board builds an ensemble with its outcome (it is born scored). The schedule's
    decision that a stopped fit runs again is `Again`, which the engine records."""
    from embedkit.tuning._candidate import Candidate, Outcome
    from embedkit.tuning._engine import Search

    written = [w for w in _assigned("outcome") if not w.startswith("tuning/_engine.py:")]
    assert not written, "a candidate's outcome assigned outside the engine: " + "; ".join(written)
    c = Candidate(representation="tfidf", head="logreg")
    for name in (f.name for f in dataclasses.fields(Outcome)):
        with pytest.raises(AttributeError):
            setattr(c, name, getattr(c, name))
    before = c.outcome
    Search.record(c, status="scored", score=0.75)
    assert (c.status, c.score, c.note) == ("scored", 0.75, "") and c.outcome is not before
    assert before.status == "waiting"  # a record is never changed, only replaced
    again = c.but(rows=[0, 1])
    assert again.status == "waiting" and np.isnan(again.score) and c.score == 0.75


def test_a_candidate_is_what_was_asked_its_plan_and_its_outcome_each_with_one_writer():
    """Once made, a candidate's fields are what was asked for and are never assigned; how it is
    to run is its `Plan`, a frozen record that `settle` alone replaces (planning costs drafts,
    `Candidate.planned`, so a candidate is never set to be costed and set back: the
    mutate-and-restore issue 59 named); the candidate shows its plan under the same names, which
    cannot be assigned. A draft keeps the key its candidate was asked under (what the schedule
    counts as tried); a new candidate (`Candidate.but`) is asked as it is."""
    from embedkit.tuning._candidate import PLANNED, Candidate, Plan, settle

    assert [w.split(":")[0] for w in _assigned("plan")] == ["tuning/_candidate.py"]
    c = Candidate(representation="tfidf", head="logreg", plan=Plan(params={"head__C": 2.0}, estimate=3.0))
    asked, before = c.key, c.plan
    draft = c.planned(rows=[0, 1], params={}, estimate=1.5)
    assert draft.asked == asked and draft.key != asked and c.rows is None  # a draft leaves c be
    settle(c, draft, share=0.5)
    assert (c.rows, c.params, c.estimate, c.share) == ([0, 1], {}, 1.5, 0.5) and c.asked == asked
    assert c.plan is not before and before.estimate == 3.0  # replaced, never changed
    assert set(PLANNED) == {f.name for f in dataclasses.fields(Plan)}
    made = [f.name for f in dataclasses.fields(Candidate) if f.name not in ("plan", "outcome")]
    for name in [*PLANNED, *made]:
        with pytest.raises(AttributeError, match="not assigned|no setter"):
            setattr(c, name, getattr(c, name))
    assert c.but(seed=1).asked == c.but(seed=1).key != asked
    with pytest.raises(TypeError, match="score"):
        settle(c, score=0.9)  # an outcome is the engine's to record


#: the schedule's side: what decides and plans the search, and what it reads of the engine
SCHEDULE_SIDE = ("_schedule", "_prologue", "_plans", "_value", "_twin", "_jobs", "_finish",
                 "_leaderboard")
#: the engine's members the schedule's side may read (issue 59: at most 12); the data and its
#: split count once, as ``data``, the clock and the reserve as ``time``, the candidates and what
#: runs as ``board`` (`embedkit.tuning._view`); the engine's schedule is not among them (a pair's
#: head as planned is its state's, `PairState.head`, which the finish reads), nor its record of a
#: model left out (the schedule returns a `LeaveOut`, which the engine records)
ENGINE_MEMBERS_READ = 10


def _engine_members_read() -> dict[str, set[str]]:
    """Each member of the engine the schedule's side reads (as ``s.x``, ``search.x`` or
    ``self.search.x``), with the modules that read it."""
    read: dict[str, set[str]] = {}
    for name in SCHEDULE_SIDE:
        tree = ast.parse((PACKAGE / "tuning" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id in ("s", "search")) or (
                    isinstance(owner, ast.Attribute) and owner.attr == "search"
                    and isinstance(owner.value, ast.Name) and owner.value.id == "self"):
                read.setdefault(node.attr, set()).add(name)
    return read


def test_the_schedules_side_reads_no_more_of_the_engine_than_it_did():
    """The schedule, the plans and the finish read the engine through a narrow surface; the
    documents, targets and split are one member, ``data`` (`embedkit.tuning._split.Split`). A
    new member read widens the ring the search is meant to leave behind: read it through one
    already read, or through ``data``."""
    read = _engine_members_read()
    assert "data" in read and not {"docs", "train", "valid", "y_valid", "folds"} & set(read)
    assert "leave_out" not in read, ("the schedule's side records a model left out itself: return "
                                     f"a `LeaveOut` for the engine to record ({read['leave_out']})")
    assert len(read) <= ENGINE_MEMBERS_READ, (
        f"the schedule's side reads {len(read)} members of the engine (at most "
        f"{ENGINE_MEMBERS_READ}): {sorted(read)}")


def test_a_features_and_head_pipeline_is_built_in_the_registry_alone():
    """Every ``Pipeline([("features", ...), ("head", ...)])`` the package composes comes from
    `embedkit.registry.pair_pipeline`: the CLI's pairs, the search's candidates, baselines and
    ensembles, and `embedkit.search` build their models one way (docstring examples aside)."""
    built = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", ""))
                    == "Pipeline" and node.args and isinstance(node.args[0], ast.List)
                    and any(isinstance(step, ast.Tuple) and isinstance(step.elts[0], ast.Constant)
                            and step.elts[0].value == "features" for step in node.args[0].elts)):
                built.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert [place.split(":")[0] for place in built] == ["embedkit/registry.py"], (
        f"(features, head) pipelines built outside embedkit.registry.pair_pipeline: {built}")
