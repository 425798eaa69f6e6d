"""The search's two halves apart (issue 59): the schedule (`embedkit.tuning._schedule.Schedule`)
run on a small view of a search that is no engine, only the members the schedule's side may
read of one (`tests/test_architecture.py`); and the engine (`embedkit.tuning._engine.Search`)
running a scripted schedule. Real documents, split, board, clock and pair states; what the view
does beyond them is the least that answers (an estimate from the pair's state or its prior, a
model left out recorded with the seconds it needs, a fit scored as the test says)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from sklearn.base import clone

import embedkit
from embedkit._budget import Clock
from embedkit.registry import sampled_settings
from embedkit.tuning import TFIDF_BASELINE, baseline_pipelines
from embedkit.tuning._asked import Asked
from embedkit.tuning._candidate import Candidate, Job
from embedkit.tuning._costs import PairState, States, work_of
from embedkit.tuning._engine import Search
from embedkit.tuning._schedule import Schedule
from embedkit.tuning._split import Split
from embedkit.tuning._view import Board, Time

LOGREG, MLP = ("tfidf", "logreg"), ("tfidf", "mlp")


class Paused(Clock):
    """A budget whose clock does not move."""

    def elapsed(self) -> float:
        return 0.0


@pytest.fixture(scope="module")
def questions():
    """300 TREC questions (6 classes): 60 validation rows, 240 to train on."""
    from sklearn.model_selection import train_test_split

    df = embedkit.load_dataset("trec")
    df = df[df["split"] == "train"]
    rows, _ = train_test_split(df, train_size=300, stratify=df["label"], random_state=0)
    return rows.reset_index(drop=True)


class View:
    """What the schedule's side reads of a search, and nothing else: no lanes run, no fit is
    made; the test records each outcome as an engine would (`scored`)."""

    def __init__(self, df, seconds: float, pairs):
        self.data = Split(df["text"].to_numpy(object), df["label"].to_numpy(), validation=0.2, seed=0)
        self.data.split()
        self.asked = Asked(pairs=tuple(pairs), cache="memory")
        self.time = Time(Paused(seconds), lambda: 0.0)
        self.board = Board(self.data, self.asked)
        self.costs = States()
        self.lanes = {"cores": None}
        self.lines: list[str] = []
        self.needs: dict[str, float | None] = {}  # each model left out: the seconds it needs

    def say(self, line: str) -> None:
        self.lines.append(line)

    def estimate(self, c: Candidate) -> float:
        state = self.costs[c.pair]
        return state.seconds(work_of(c.build(), self.data.n_rows(c))) if state.measured else c.prior

    def fits(self, c: Candidate) -> bool:
        return c.estimate <= self.time.left()

    def leave_out(self, c: Candidate, why: str = "", need: float | None = None,
                  including: str = "it") -> None:
        c.status = "left out"
        self.needs[c.label] = c.estimate if not why else need
        if c not in self.board.candidates:
            self.board.candidates.append(c)

    @contextlib.contextmanager
    def guard(self, seconds: float):
        yield

    def scored(self, c: Candidate, right: int, seconds: float = 1.0) -> Candidate:
        """``c`` fitted in ``seconds``, right on the first ``right`` validation rows."""
        n, k = len(self.data.valid), len(self.data.classes)
        truth = np.searchsorted(self.data.classes, self.data.y_valid)
        c.proba = np.eye(k)[np.where(np.arange(n) < right, truth, (truth + 1) % k)]
        c.status, c.score = "scored", self.data.score_proba(c.proba)
        c.fit_seconds, c.predict_seconds = seconds, 0.0
        if c not in self.board.candidates:
            self.board.candidates.append(c)
        self.costs[c.pair].observe(work_of(c.build(), self.data.n_rows(c)), seconds)
        self.costs[c.pair].observe_predict(n, 0.0)
        self.board.update_ensemble()
        return c


def _baselines() -> dict:
    return {name: (lambda pipe=pipe: clone(pipe)) for name, pipe in baseline_pipelines().items()}


def _begun(questions, seconds, pairs) -> tuple[View, Schedule]:
    view, schedule = View(questions, seconds, pairs), Schedule(_baselines())
    schedule.begin(view)
    base = schedule.ask("cores")
    assert base.name == TFIDF_BASELINE  # the prologue: the plain TF-IDF baseline first
    view.scored(base, 40)
    load = schedule.ask("cores")
    assert isinstance(load, Job) and load.kind == "load"  # then the encoder, here unreadable
    schedule.tell(load, OSError("weights unreadable"))
    return view, schedule


def test_the_schedule_runs_a_search_on_a_view_that_is_no_engine(questions):
    """Through the prologue, every pair's default, the fill's variants and to its end, the
    schedule asks the view for nothing beyond the members it may read: the cheaper default
    first at the same expected gain, the fill once both are done, then nothing."""
    view, schedule = _begun(questions, 300, [LOGREG, MLP])
    view.costs[MLP] = PairState(overhead=20.0, rate=0.0, predict_rate=0.0)  # dearer for the same gain
    asked = []
    while (c := schedule.ask("cores")) is not None:
        assert isinstance(c, Candidate) and len(asked) < 100
        asked.append(c)
        view.scored(c, 42 if c.pair == LOGREG else 41, seconds=20.0 if c.pair == MLP else 1.0)
    assert [c.pair for c in asked[:2]] == [LOGREG, MLP]
    assert all(c.variant_of is None and c.grown_from is None for c in asked[:2])
    # then variants of each (the registry's sampled settings), until none is left untried
    settings = {pair: len(list(sampled_settings(*pair, None, 0))) for pair in (LOGREG, MLP)}
    assert view.board.filling and 2 < len(asked) <= 2 + sum(settings.values())
    assert all(c.variant_of in asked[:2] for c in asked[2:])
    assert len({c.key for c in asked}) == len(asked)  # none asked twice
    assert not view.needs and any("failed (weights unreadable)" in line for line in view.lines)


def test_a_model_that_does_not_fit_reaches_the_view_with_the_seconds_it_needs(questions):
    """The schedule leaves out a default whose fit needs more than the time left by handing the
    view the model and its seconds (the view words the budget), and goes on to the next."""
    view, schedule = _begun(questions, 300, [LOGREG, MLP])
    view.costs[MLP] = PairState(overhead=1000.0, rate=0.0, predict_rate=0.0)  # far past 300 s
    c = schedule.ask("cores")
    assert c.pair == LOGREG
    mlp = next(o for o in schedule.defaults if o.pair == MLP)
    assert mlp.status == "left out" and view.needs[mlp.label] == pytest.approx(mlp.estimate)
    assert mlp.estimate > view.time.left()


class Script:
    """A schedule that asks for ``actions`` in order on the cores and keeps what it is told."""

    def __init__(self, actions):
        self.actions, self.told = list(actions), []

    def begin(self, search) -> None:
        self.search = search

    def ask(self, lane: str):
        return self.actions.pop(0) if self.actions and lane == "cores" else None

    def tell(self, action, outcome) -> None:
        self.told.append((action, outcome))

    def end(self) -> None:
        self.told.append(("end", None))


def test_the_engine_runs_what_a_scripted_schedule_asks_and_tells_it_every_outcome(questions):
    """The engine fits and scores a candidate on the validation rows, runs a job and hands
    back what it returned or raised, each outcome told once in the order asked, and stops when
    nothing is asked and nothing runs, telling the schedule the search ended."""
    def broken():
        raise RuntimeError("no such file")

    model = Candidate(representation="tfidf", head="logreg", tier="sparse + linear", cache="memory")
    ran = Job("counts the documents", lambda: "measured", kind="job")
    fails = Job("reads a file", broken, kind="job")
    script = Script([model, ran, fails])
    search = Search(questions["text"].to_numpy(object), questions["label"].to_numpy(),
                    clock=Clock(120), pairs=[LOGREG], scoring="accuracy", validation=0.2,
                    finetune=False, cache="memory", random_state=0, say=lambda line: None)
    search.run(script)
    assert [action for action, _ in script.told] == [model, ran, fails, "end"]
    assert script.told[0][1] is model and model.status == "scored" and 0.3 < model.score <= 1.0
    assert model.score == search.data.score_proba(model.proba) and model.model is not None
    assert search.costs[LOGREG].measured and search.costs[LOGREG].fits == 1
    assert script.told[1][1] == "measured" and ran.status == "done"
    assert isinstance(script.told[2][1], RuntimeError) and fails.status == "failed"
    assert search.board.scored() == [model] and not search.board.running
