"""The search's two halves apart (issue 59): the schedule (`embedkit.tuning._schedule.Schedule`)
run on a small view of a search that is no engine, only the members the schedule's side may
read of one (`tests/test_architecture.py`); and the engine (`embedkit.tuning._engine.Search`)
running a scripted schedule. Real documents, split, board, clock and pair states; what the view
does beyond them is the least that answers (an estimate from the pair's state or its prior, a
fit scored as the test says); a model the schedule leaves out comes back from it as a decision
(`LeaveOut`), which the test records as the engine would."""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest
from sklearn.base import clone

import embedkit
from embedkit._budget import Clock
from embedkit.registry import sampled_settings
from embedkit.tuning import TFIDF_BASELINE, baseline_pipelines
from embedkit.tuning._asked import Asked
from embedkit.tuning._candidate import Again, Candidate, Job, LeaveOut, Outcome, Plan
from embedkit.tuning._costs import PairState, States, work_of
from embedkit.tuning._engine import Search
from embedkit.tuning._schedule import Schedule
from embedkit.tuning._settings import MARGIN
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

    def say(self, line: str) -> None:
        self.lines.append(line)

    def estimate(self, c: Candidate) -> float:
        state = self.costs[c.pair]
        return state.seconds(work_of(c.build(), self.data.n_rows(c))) if state.measured else c.prior

    def fits(self, c: Candidate) -> bool:
        return c.estimate <= self.time.left()

    @contextlib.contextmanager
    def guard(self, seconds: float):
        yield

    def scored(self, c: Candidate, right: int, seconds: float = 1.0) -> Candidate:
        """``c`` fitted in ``seconds``, right on the first ``right`` validation rows."""
        n, k = len(self.data.valid), len(self.data.classes)
        truth = np.searchsorted(self.data.classes, self.data.y_valid)
        proba = np.eye(k)[np.where(np.arange(n) < right, truth, (truth + 1) % k)]
        c.outcome = Outcome(status="scored", score=self.data.score_proba(proba), proba=proba,
                            fit_seconds=seconds, predict_seconds=0.0)
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
    assert schedule.tell(load, OSError("weights unreadable")) == []
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
    assert any("failed (weights unreadable)" in line for line in view.lines)
    assert [c.status for c in schedule.defaults] == ["scored", "scored"] and schedule.end() == []


def test_a_model_that_does_not_fit_is_a_decision_the_schedule_returns_not_a_record_it_writes(
        questions):
    """The schedule leaves out a default whose fit needs more than the time left by returning
    it, costed, as a `LeaveOut` (the engine records it and words the budget); asked again once
    that is recorded, it goes on to the next. A default never started is left out at the end
    the same way."""
    view, schedule = _begun(questions, 300, [LOGREG, MLP])
    view.costs[MLP] = PairState(overhead=1000.0, rate=0.0, predict_rate=0.0)  # far past 300 s
    mlp = next(o for o in schedule.defaults if o.pair == MLP)
    decision = schedule.ask("cores")
    assert isinstance(decision, LeaveOut) and decision.candidate is mlp and not decision.why
    assert mlp.estimate == pytest.approx(1000.0 * MARGIN) and mlp.estimate > view.time.left()
    assert mlp.status == "waiting" and mlp not in view.board.candidates  # recorded by none yet
    mlp.outcome = Outcome(status="left out")  # as the engine records it
    c = schedule.ask("cores")
    assert c.pair == LOGREG and not decision  # a decision to leave out is falsy, as the plans' no
    assert [(d.candidate, d.why) for d in schedule.end()] == [
        (c, "not tried: the search's time ran out before its turn")]


class Script:
    """A schedule that asks for ``actions`` in order on the cores and keeps what it is told."""

    def __init__(self, actions):
        self.actions, self.told = list(actions), []

    def begin(self, search) -> None:
        self.search = search

    def ask(self, lane: str):
        return self.actions.pop(0) if self.actions and lane == "cores" else None

    def tell(self, action, outcome) -> list:
        self.told.append((action, outcome))
        return []

    def end(self) -> list:
        self.told.append(("end", None))
        return []


def test_the_engine_runs_what_a_scripted_schedule_asks_and_tells_it_every_outcome(questions):
    """The engine fits and scores a candidate on the validation rows, runs a job and hands
    back what it returned or raised, each outcome told once in the order asked, and stops when
    nothing is asked and nothing runs, telling the schedule the search ended; a model the
    schedule leaves out it records, wording the budget that would include it."""
    def broken():
        raise RuntimeError("no such file")

    model = Candidate(representation="tfidf", head="logreg", tier="sparse + linear", cache="memory")
    ran = Job("counts the documents", lambda: "measured", kind="job")
    fails = Job("reads a file", broken, kind="job")
    dear = Candidate(representation="tfidf", head="mlp", tier="sparse + linear", plan=Plan(estimate=500.0))
    script = Script([model, LeaveOut(dear, need=500.0), ran, fails])
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
    assert dear.status == "left out" and dear in search.board.candidates and re.fullmatch(
        r"needs about 8\.3 min, \d\.\d min were left; a budget of about \d+\.\d min would include it",
        dear.note), dear.note


def test_the_engine_records_a_schedules_again_as_waiting_and_runs_it_when_asked(questions):
    """A schedule's `Again` (a stopped fit sized anew) is recorded by the engine: the candidate's
    outcome cleared to waiting, a new record rather than the old one changed; asked again, it
    runs and is scored, one row on the board."""
    model = Candidate(representation="tfidf", head="logreg", tier="sparse + linear", cache="memory")
    seen, asked = [], []

    class Twice(Script):
        def ask(self, lane):
            action = super().ask(lane)
            if action is not None:
                asked.append(action.status)
            return action

        def tell(self, action, outcome):
            super().tell(action, outcome)
            seen.append((action.outcome, action.status))
            if len(self.told) == 1:  # its first outcome: run it again
                self.actions.append(action)
                return [Again(action)]
            return []

    script = Twice([model])
    search = Search(questions["text"].to_numpy(object), questions["label"].to_numpy(),
                    clock=Clock(120), pairs=[LOGREG], scoring="accuracy", validation=0.2,
                    finetune=False, cache="memory", random_state=0, say=lambda line: None)
    search.run(script)
    (first, status), (second, _) = seen
    assert status == "scored" and first.status == "scored"  # the first record kept as it was
    assert second is model.outcome and second is not first and model.status == "scored"
    assert [a for a, _ in script.told] == [model, model, "end"] and asked == ["waiting", "waiting"]
    assert search.board.candidates == [model] and search.costs[LOGREG].fits == 2
