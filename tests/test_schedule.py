"""The budgeted search's schedule (`embedkit.tuning._schedule`), tested through its interface
against the real engine (`embedkit.tuning._engine.Search`) on real data: a test builds a search
whose clock does not move and whose finish keeps nothing back, begins the schedule on it
(``search.begin(schedule)``), then plays the engine's loop by hand: ``search.ask(schedule,
lane)`` (the schedule's next action, the models it leaves out on the way recorded), the outcome of
what it asked for (a candidate scored, a job's result, which the engine records first:
``search.measured``), ``search.tell(schedule, action, outcome)``. Pair costs are set directly
(`embedkit.tuning._costs.PairState`), so estimates are exact. No private method is called."""

from __future__ import annotations

import dataclasses
import math
import re
import time

import numpy as np
import pytest
from sklearn.base import clone

import embedkit
from embedkit._budget import DECIDING, Clock
from embedkit.heads.finetune.sizing import ROWS_PER_CLASS, SHORT_LENGTH, WORK_EXPONENT
from embedkit.registry import HEADS, REPRESENTATIONS
from embedkit.tuning import MINILM_BASELINE, TFIDF_BASELINE, _jobs, baseline_pipelines
from embedkit.tuning._candidate import Candidate, Job, LeaveOut, Plan, describe, settle
from embedkit.tuning._costs import PairState, States, work_of
from embedkit.tuning._engine import Search
from embedkit.tuning._finish import Finish
from embedkit.tuning._schedule import Schedule
from embedkit.tuning._settings import (
    CURVE_EXPONENT,
    ENCODE_SHARE,
    ENCODER_LOAD,
    FEW_ROWS_A_CLASS,
    FEW_ROWS_EXPONENT,
    GROWTH,
    MARGIN,
    MAX_SEEDS,
    MIN_PROBE_SECONDS,
    MIN_ROWS,
    PROBE_STEPS,
    REFIT_MARGIN,
    RESERVED_SEEDS,
    START_SHARE,
    VARIANT_SHARE,
)

FINETUNE = ("passthrough", "finetune-short")
MPNET = ("passthrough", "finetune-mpnet")
SETFIT = ("passthrough", "setfit")


class Paused(Clock):
    """A budget whose clock does not move: what a test asserts does not hang on its speed."""

    def elapsed(self) -> float:
        return 0.0


class NothingKept(Finish):
    """A finish that keeps nothing back: the schedule's own arithmetic, alone."""

    def reserve(self, search, filling=False) -> float:
        return 0.0


def _slice(df, n):
    from sklearn.model_selection import train_test_split

    rows, _ = train_test_split(df, train_size=n, stratify=df["label"], random_state=0)
    return rows.reset_index(drop=True)


@pytest.fixture(scope="module")
def trec():
    """TREC's 5,452 training questions (6 classes): 1,090 validation rows, 4,362 to train on."""
    df = embedkit.load_dataset("trec")
    return df[df["split"] == "train"].reset_index(drop=True)


@pytest.fixture(scope="module")
def questions(trec):
    """300 of them: 60 validation rows, 240 to train on (fewer than `MIN_ROWS`)."""
    return _slice(trec, 300)


@pytest.fixture(scope="module")
def news():
    """BBC News (2,225 articles, 5 topics): documents that need 256 word pieces."""
    return embedkit.load_dataset("bbc-news")


def _search(df, seconds, pairs, lines=None, validation=0.2, finish=None, device_lane=None):
    return Search(df["text"].to_numpy(object), df["label"].to_numpy(), clock=Paused(seconds),
                  pairs=pairs, scoring="accuracy", validation=validation, finetune="auto",
                  cache="memory", random_state=0,
                  say=lines.append if lines is not None else (lambda line: None),
                  finish=finish or NothingKept(), device_lane=device_lane)


def _baselines() -> dict:
    return {name: (lambda pipe=pipe: clone(pipe)) for name, pipe in baseline_pipelines().items()}


def _begin(df, seconds, pairs, lines=None, **kwargs) -> tuple[Search, Schedule]:
    """A search split and a schedule begun on it, as `Search.run` starts them."""
    search = _search(df, seconds, pairs, lines, **kwargs)
    schedule = Schedule(_baselines())
    search.begin(schedule)
    return search, schedule


def _scored(search, c, right: int, fit: float = 1.0, predict: float = 0.0, measure: bool = True):
    """``c`` as the engine records it once fitted: right on the first ``right`` validation rows
    (an accuracy of ``right / len(search.data.valid)``), wrong on the others; its pair's state learns
    its seconds where ``measure``."""
    n, k = len(search.data.valid), len(search.data.classes)
    truth = np.searchsorted(search.data.classes, search.data.y_valid)
    proba = np.eye(k)[np.where(np.arange(n) < right, truth, (truth + 1) % k)]
    search.record(c, status="scored", score=search.data.score_proba(proba), proba=proba,
                  fit_seconds=fit, predict_seconds=predict)
    if c not in search.board.candidates:
        search.board.candidates.append(c)
    if measure:
        search.costs[c.pair].observe(work_of(c.build(), search.data.n_rows(c)), fit)
        search.costs[c.pair].observe_predict(n, predict)
    return c


def _encoded(schedule, done=None, per_doc=None):
    """What the prologue's pass returns: ``done`` documents (all) at ``per_doc`` seconds each
    (the rate the load measured)."""
    index = schedule.plans.unencoded(schedule.first)
    done = len(index) if done is None else done
    return done, (per_doc or schedule.plans.per_doc) * done, index


def _told(search, schedule, job: Job, outcome) -> None:
    """A job's outcome as the engine reports it: what it measured recorded, then told."""
    search.measured(job, outcome)
    search.tell(schedule, job, outcome)


def _prologue(search, schedule, tfidf: int, minilm: int, per_doc: float = 0.004):
    """The prologue through `ask` and `tell`, its outcomes as the engine would report them: the
    TF-IDF baseline right on ``tfidf`` validation rows, the encoder measured at ``per_doc``
    seconds a document, its pass, the MiniLM baseline right on ``minilm`` rows."""
    base = search.ask(schedule, "cores")
    assert base.name == TFIDF_BASELINE
    search.tell(schedule, base, _scored(search, base, tfidf))
    load = search.ask(schedule, "cores")
    assert isinstance(load, Job) and load.kind == "load"
    _told(search, schedule, load, (per_doc, None, per_doc))
    encode = search.ask(schedule, "cores")
    assert isinstance(encode, Job) and encode.kind == "encode"
    _told(search, schedule, encode, _encoded(schedule))
    baseline = search.ask(schedule, "cores")
    assert baseline.name == MINILM_BASELINE
    search.tell(schedule, baseline, _scored(search, baseline, minilm))
    return base, baseline


def _default(schedule, pair) -> Candidate:
    return next(c for c in schedule.defaults if c.pair == pair)


def _cost(search, pair, **measured) -> None:
    """``pair``'s cost set as if measured (exact estimates), the head its plans sized kept."""
    search.costs[pair] = PairState(**measured, head=search.costs[pair].head)


def _measured(search, schedule, pair, seconds_of_own_recipe: float) -> None:
    """A fine-tuning pair whose own recipe on every training row takes this many seconds, with
    the margin (no load, no prediction cost)."""
    work = schedule.plans.head(_default(schedule, pair)).fit_work(len(search.data.train))
    _cost(search, pair, rate=seconds_of_own_recipe / MARGIN / work, predict_rate=0.0)


# -- costs and identity ------------------------------------------------------------------------
def test_a_pair_state_keeps_its_largest_fits_rate_and_applies_its_margin_once(monkeypatch):
    from embedkit.tuning import _costs

    state = States()[("tfidf", "logreg")]
    assert not state.measured and math.isnan(state.fit_seconds(10))
    state.observe(100, 10.0)
    state.observe(150, 10.0)  # about the same work (within sqrt(GROWTH)), cheaper: the dearer stands
    assert state.rate == 0.1 and state.fits == 2 and state.margin == MARGIN
    state.observe(50, 20.0)  # a smaller fit, dearer per unit (its fixed costs weigh more): ignored
    assert state.rate == 0.1
    # a fit clearly larger (a probe's slice, then a first fit on thirty times its rows) is the
    # nearest to the fits ahead: its rate stands, dearer or cheaper
    grown = States()[("tfidf", "sgd")]
    grown.observe(400, 0.4)
    grown.observe(12000, 1.2)
    assert grown.rate == pytest.approx(1e-4) and grown.rate_work == 12000
    grown.observe(36000, 36.0)  # a cost growing faster than its rows shows in the largest fit
    assert grown.rate == pytest.approx(1e-3)
    state.observe(300, 30.0)
    assert state.rate == 0.1 and state.rate_work == 300
    assert state.fit_seconds(300) == pytest.approx(30.0)  # as measured
    assert state.seconds(300) == pytest.approx(MARGIN * 30.0)  # the margin, once
    assert state.seconds(300, margin=1.0) == pytest.approx(30.0)
    # before a prediction is measured it is counted in units of work at the fit's rate
    assert state.seconds(300, 100, predict_units=50) == pytest.approx(MARGIN * (30.0 + 5.0))
    state.observe_predict(50, 1.0)
    state.observe_predict(50, 0.5)  # the dearer again: 0.02 s a row
    assert state.seconds(300, 100, predict_units=50) == pytest.approx(MARGIN * (30.0 + 2.0))

    # two timed fits: 1 s to load, 0.5 s a unit of work (a clock that moves only when fits run)
    now = [0.0]
    monkeypatch.setattr(_costs.time, "monotonic", lambda: now[0])
    seconds = [1.0 + 0.5 * 2, 1.0 + 0.5 * 6]

    def fit(i):
        now[0] += seconds[i]

    timed = PairState()
    timed.measure_steps(fit, (2.0, 6.0))
    assert (timed.rate, timed.overhead, timed.fits) == (pytest.approx(0.5), pytest.approx(1.0), 2)
    assert timed.seconds(10) == pytest.approx(MARGIN * 6.0)
    # a noisy difference (5.0 s, then 5.2 s) is not a rate cheaper than half the larger fit's
    seconds[:] = [5.0, 5.2]
    noisy = PairState()
    noisy.measure_steps(fit, (2.0, 6.0))
    assert noisy.rate == pytest.approx(0.5 * 5.2 / 6) and noisy.overhead == pytest.approx(
        5.0 - 2 * 0.5 * 5.2 / 6)

    # scaled to a model eight times the compute: expected, no margin, until it is measured
    scaled = PairState(overhead=2.0, rate=0.5).scaled(8.0)
    assert (scaled.overhead, scaled.rate, scaled.margin) == (16.0, 4.0, 1.0)
    assert scaled.seconds(10) == pytest.approx(16.0 + 40.0)
    scaled.observe(10, 100.0)  # measured here now: the margin comes back
    assert scaled.margin == MARGIN and scaled.rate == pytest.approx((100.0 - 16.0) / 10)


def test_work_is_rows_to_the_1_1_times_epochs_or_what_the_head_counts():
    from sklearn.pipeline import Pipeline

    def pipe(rep, head):
        return Pipeline([("features", REPRESENTATIONS[rep].factory()),
                         ("head", HEADS[head].factory())])

    assert work_of(pipe("tfidf", "mlp"), 1000) == pytest.approx(1000 ** 1.1 * 10)  # ten epochs
    assert work_of(pipe("tfidf", "logreg-cv"), 1000) == pytest.approx(1000 ** 1.1)
    tuned = Candidate(representation="passthrough", head="finetune-short",
                      plan=Plan(recipe={"head__max_length": 32, "head__epochs": 2})).build()
    assert work_of(tuned, 320) == pytest.approx(2 * 10 * 32 / 64)  # 2 epochs x 10 batches of 32


def test_a_candidate_is_its_fields_and_its_label_only_shows_them():
    plan = Candidate(representation="passthrough", head="finetune-short", tier="fine-tuning",
                     plan=Plan(recipe={"head__max_length": 32, "head__epochs": 2, "head__k": 6}, seed=0))
    variant = plan.but(params={"head__lr": 5e-5}, variant_of=plan)
    assert plan.label == "finetune-short (max_length=32, epochs=2, k=6, seed 0)"
    assert variant.label == "finetune-short (max_length=32, epochs=2, k=6, lr=5e-05, seed 0)"
    assert variant.key != plan.key and plan.but(seed=1).key != plan.key
    assert plan.but().key == plan.key  # the same fields are the same model
    params = variant.build().get_params()
    assert (params["head__lr"], params["head__max_length"], params["head__random_state"],
            params["head__early_stopping"]) == (5e-5, 32, 0, False)
    sparse = Candidate(representation="tfidf", head="logreg",
                       plan=Plan(params={"features__ngram_range": (1, 2)}))
    assert sparse.label == "tfidf + logreg (ngram_range=(1, 2))" and sparse.pair == ("tfidf", "logreg")
    # rows: a subsample is part of the model (by its size: the subsamples are nested)
    small = sparse.but(rows=np.arange(1000))
    assert small.label == "tfidf + logreg (ngram_range=(1, 2), rows=1000)"
    assert small.key != sparse.key and small.but(rows=np.arange(1, 1001)).key == small.key
    grown = small.but(rows=np.arange(3000), grown_from=small)
    assert grown.line() is small and small.line() is small
    # a baseline is its name, and says its rows when it fits on a subsample
    baseline = Candidate(name=TFIDF_BASELINE, kind="baseline", plan=Plan(rows=np.arange(1500)))
    assert baseline.label == "plain TF-IDF + LR (rows=1500)" and baseline.pair == (TFIDF_BASELINE,)
    assert baseline.but(rows=None).label == TFIDF_BASELINE


# -- the prologue ------------------------------------------------------------------------------
def test_the_prologue_asks_the_baseline_the_encoders_load_and_pass_then_the_minilm_baseline(
        questions):
    """The plain TF-IDF baseline first, then the packaged MiniLM loaded and timed (a job), then
    its pass over every document (it takes under `START_SHARE` of the time left), then the MiniLM
    baseline on every row; the frozen pairs then read the cached vectors: their estimates no
    longer hold the pass. The jobs run for real here."""
    lines = []
    pairs = [("tfidf", "logreg"), ("minilm", "logreg-cv")]
    search, schedule = _begin(questions, 300, pairs, lines)
    assert any("240 training rows, 60 validation rows; tiers: sparse + linear (1 pairs), "
               "frozen encoder (1 pairs)" in line for line in lines)
    first = search.ask(schedule, "cores")
    assert first.name == TFIDF_BASELINE and first.kind == "baseline" and first.rows is None
    assert first.estimate == first.prior > 0  # its rough cost: no probe on 240 rows
    assert search.ask(schedule, "device") is None  # nothing runs beside the prologue
    search.tell(schedule, first, _scored(search, first, 40))

    load = search.ask(schedule, "cores")
    assert isinstance(load, Job) and (load.kind, load.about, load.estimate) == (
        "load", "minilm", ENCODER_LOAD)
    per_doc, sample, fresh = load.run()  # the packaged MiniLM, loaded and timed
    assert 0 < per_doc < 0.5 and len(sample) == 64
    assert fresh > 0  # timed again without the cache: what a new document costs
    _told(search, schedule, load, (per_doc, sample, fresh))
    assert search.encode_rates["minilm"] == fresh and math.isnan(search.board.encoder_seconds)

    encode = search.ask(schedule, "cores")
    assert isinstance(encode, Job) and (encode.kind, encode.about) == ("encode", "minilm")
    assert encode.label == "minilm: encoding 300 documents"
    assert encode.estimate == pytest.approx(MARGIN * per_doc * 300)
    frozen = _default(schedule, ("minilm", "logreg-cv"))
    assert frozen.rows is None  # every row: the pass covers them
    outcome = encode.run()
    assert outcome[0] == 300 and outcome[1] > 0
    _told(search, schedule, encode, outcome)
    assert any("frozen encoder: minilm: 300 documents encoded once" in line for line in lines)
    # what a new document costs a model reading the cache: the pass's rate, at least the fresh
    assert search.encode_rates["minilm"] == max(outcome[1] / 300, fresh)
    assert search.board.encoder_seconds == outcome[1]
    assert schedule.plans.per_doc == pytest.approx(outcome[1] / 300)  # the pass's own rate

    baseline = search.ask(schedule, "cores")
    assert baseline.name == MINILM_BASELINE and baseline.rows is None
    assert baseline.extra_refit == 0.0  # every document is encoded: a refit reads the cache
    search.tell(schedule, baseline, _scored(search, baseline, 30))
    # the pass is paid: the frozen pair costs its head alone, on cached vectors
    assert schedule.plans.pass_seconds(frozen) == 0.0
    assert frozen.prior == pytest.approx(HEADS["logreg-cv"].cost * 240 / 1000)
    assert search.board.tiers_reached == ["baselines"]
    chosen = search.ask(schedule, "cores")
    assert isinstance(chosen, Candidate) and chosen.kind == "candidate"


def test_a_dearer_encoders_frozen_pairs_start_on_what_their_own_pass_affords(trec):
    """The prologue's MiniLM pass cut to a subsample hands its rows to the frozen pairs that read
    MiniLM only: frozen mpnet, whose pass costs several times MiniLM's a document, starts on the
    rows its own pass fits in `START_SHARE` of the time left (handed MiniLM's thousands of rows,
    it was left out as too dear, or its pass took minutes)."""
    search, schedule = _begin(trec, 1000, [("minilm", "logreg-cv"), ("mpnet", "logreg-cv")])
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 800))
    load = search.ask(schedule, "cores")
    _told(search, schedule, load, (0.035, None, 0.035))
    encode = search.ask(schedule, "cores")
    minilm, mpnet = _default(schedule, ("minilm", "logreg-cv")), _default(schedule, ("mpnet", "logreg-cv"))
    assert len(minilm.rows) == 1195 and mpnet.rows is None
    _told(search, schedule, encode, _encoded(schedule))
    schedule.plans.estimate(mpnet)  # here not even its least start fits the share: the least
    assert len(mpnet.rows) == MIN_ROWS and np.array_equal(mpnet.rows, search.data.sample_rows(MIN_ROWS))
    handed = mpnet.but(rows=minilm.rows)
    assert mpnet.estimate < schedule.plans.cost(handed)  # what MiniLM's rows would cost it
    # a refit's encoding is each encoder's own: MiniLM's rest at its rate, mpnet's at its own
    n = len(search.data.docs)
    assert minilm.extra_refit == pytest.approx(MARGIN * 0.035 * (n - 2285))
    assert mpnet.extra_refit == 0.0  # no pass of its own yet: nothing of MiniLM's is its
    index = schedule.plans.unencoded(mpnet)
    job = _jobs.encode(search, "mpnet", index, 0.2, MARGIN * 0.2 * len(index))
    _told(search, schedule, job, (len(index), 0.2 * len(index), index))
    assert mpnet.extra_refit == pytest.approx(MARGIN * 0.2 * (n - len(index)))
    assert minilm.extra_refit == pytest.approx(MARGIN * 0.035 * (n - 2285))


def test_a_pass_too_long_for_the_time_left_encodes_a_subsample_the_frozen_tier_starts_on(trec):
    """Where the pass over every document takes more than `START_SHARE` of the time left, it
    covers the validation rows and the stratified subsample of training rows that fits that
    share (at least `MIN_ROWS`); the MiniLM baseline and the frozen defaults start on those rows,
    and a refit on every document counts the rest's encoding."""
    lines = []
    pairs = [("minilm", "logreg-cv")]
    search, schedule = _begin(trec, 1000, pairs, lines)
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 800))
    load = search.ask(schedule, "cores")
    # 0.035 s a document (0.04375 with the margin): all 5,452 need 239 s, over 100 s
    _told(search, schedule, load, (0.035, None, 0.035))
    m = int(START_SHARE * 1000 / (MARGIN * 0.035)) - len(search.data.valid)
    assert m == 1195 and len(search.data.valid) == 1090
    encode = search.ask(schedule, "cores")
    assert encode.kind == "encode" and encode.label == "minilm: encoding 2,285 documents"
    assert encode.estimate == pytest.approx(MARGIN * 0.035 * 2285)
    frozen = _default(schedule, ("minilm", "logreg-cv"))
    assert len(frozen.rows) == m and np.array_equal(frozen.rows, search.data.sample_rows(m))
    # stratified: every class in proportion, to a row
    share = np.unique(search.data.y_train, return_counts=True)[1] / len(search.data.train)
    counts = np.unique(search.data.y_train[frozen.rows], return_counts=True)[1]
    assert np.all(np.abs(counts - m * share) <= 1)
    _told(search, schedule, encode, _encoded(schedule))
    assert any("minilm: 2,285 documents encoded once" in line for line in lines)

    baseline = search.ask(schedule, "cores")
    assert baseline.name == MINILM_BASELINE and baseline.rows is frozen.rows
    assert baseline.label == f"{MINILM_BASELINE} (rows={m})"
    rest = len(search.data.docs) - 2285  # what a refit on every document still has to encode
    assert baseline.extra_refit == pytest.approx(MARGIN * 0.035 * rest)
    assert frozen.extra_refit == pytest.approx(MARGIN * 0.035 * rest)
    search.tell(schedule, baseline, _scored(search, baseline, 700))
    chosen = search.ask(schedule, "cores")  # the frozen default, on the rows encoded: no job first
    assert chosen is frozen and search.data.n_rows(chosen) == m
    assert chosen.estimate == pytest.approx(HEADS["logreg-cv"].cost * m / 1000)

    # slower still: the share pays for fewer rows than `MIN_ROWS`; the pass takes `MIN_ROWS`
    search, schedule = _begin(trec, 1000, pairs)
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 800))
    _told(search, schedule, search.ask(schedule, "cores"), (0.05, None, 0.05))
    encode = search.ask(schedule, "cores")
    assert encode.label == f"minilm: encoding {1090 + MIN_ROWS:,} documents"
    assert len(_default(schedule, ("minilm", "logreg-cv")).rows) == MIN_ROWS


def test_the_minilm_baseline_and_the_frozen_pairs_are_left_out_when_no_least_pass_fits(
        questions, trec):
    """Where not even loading the encoder and a pass over the validation rows and 200 training
    rows fit (at the registry's prior), or the measured pass over them would take more than
    `ENCODE_SHARE` of the time left, the MiniLM baseline and the frozen pairs are left out with
    the budget that would include them, and the same call goes on to the defaults."""
    pairs = [("tfidf", "logreg"), ("minilm", "logreg-cv")]
    search, schedule = _begin(questions, 15, pairs)  # loading and 260 documents: 18.4 s
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 40))
    chosen = search.ask(schedule, "cores")
    assert chosen.pair == ("tfidf", "logreg")
    left = {c.label: c for c in search.board.candidates if c.status == "left out"}
    assert set(left) == {MINILM_BASELINE, "minilm + logreg-cv"}
    assert left[MINILM_BASELINE].note == (
        "loading the encoder and a pass over the validation rows and 200 training rows need "
        "about 18 s; a budget of about 18 s would include it")
    assert left["minilm + logreg-cv"].note == left[MINILM_BASELINE].note

    lines = []
    search, schedule = _begin(trec, 1000, pairs, lines)
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 800))
    # 1 s a document: 1,290 need 27 min
    _told(search, schedule, search.ask(schedule, "cores"), (1.0, None, 1.0))
    chosen = search.ask(schedule, "cores")
    assert chosen.pair == ("tfidf", "logreg")
    left = [c for c in search.board.candidates if c.status == "left out"]
    assert [c.label for c in left] == [MINILM_BASELINE, "minilm + logreg-cv"]
    # the budget at which the pass over every document takes `ENCODE_SHARE` of it (with 30 s)
    assert left[0].note == ("the encoder's pass over even 200 of the 5,452 documents does not "
                            "fit the time left; a budget of about 3.8 h would include all of them")
    assert (MARGIN * 1.0 * 5452 + 30) / ENCODE_SHARE / 3600 == pytest.approx(3.8, abs=0.05)


def test_on_a_small_set_a_pass_longer_than_the_time_left_is_not_asked(questions):
    """300 questions at 2 s a document (long documents on a slow machine): every pass covers
    every document (240 training rows are fewer than `MIN_ROWS`) and needs 750 s of the 300 s
    left. The MiniLM baseline and the frozen pair should be left out, as where the least pass of a
    larger set does not fit, not asked for a pass whose own estimate is over the time left (it
    would stop after its first chunk, 64 s later, and leave them out then)."""
    search, schedule = _begin(questions, 300, [("tfidf", "logreg"), ("minilm", "logreg-cv")])
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 40))
    _told(search, schedule, search.ask(schedule, "cores"), (2.0, None, 2.0))
    asked = search.ask(schedule, "cores")
    assert not (isinstance(asked, Job) and asked.estimate > search.time.left())  # today: 750 s


def test_a_prologue_pass_that_its_own_rate_shows_cannot_finish_leaves_its_models_out(questions):
    """The pass stops where its own rate shows the rest would not fit (its job reports fewer
    documents than it was given): the MiniLM baseline and the frozen pairs are left out, saying
    so, and later estimates scale from that rate."""
    lines = []
    pairs = [("tfidf", "logreg"), ("minilm", "logreg-cv")]
    search, schedule = _begin(questions, 300, pairs, lines)
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 40))
    _told(search, schedule, search.ask(schedule, "cores"), (0.004, None, 0.004))
    encode = search.ask(schedule, "cores")
    _told(search, schedule, encode, _encoded(schedule, done=100, per_doc=0.5))  # 50 s for 100
    assert any("minilm: 100 of 300 documents encoded once in 50 s (cached for every model that "
               "reads it); the rest would not fit the time left" in line for line in lines)
    left = [c for c in search.board.candidates if c.status == "left out"]
    assert [c.label for c in left] == [MINILM_BASELINE, "minilm + logreg-cv"]
    assert all(c.note == "the encoder's pass stopped after 100 of 300 documents: the rest "
                         "would not fit the time left" for c in left)
    assert left[0].estimate == pytest.approx(0.5 * 300)
    assert schedule.plans.per_doc == pytest.approx(0.5)
    assert search.ask(schedule, "cores").pair == ("tfidf", "logreg")  # no MiniLM baseline: the defaults


# -- starting on what is cheap, and growing ----------------------------------------------------
def _sparse(search, schedule, seconds_on_every_row: float, pair=("tfidf", "logreg")):
    """A sparse default whose fit on every training row takes this many seconds (with the
    margin; nothing else costs), and its cost on ``m`` rows."""
    n = len(search.data.train)
    _cost(search, pair, rate=seconds_on_every_row / MARGIN / n ** 1.1, predict_rate=0.0)

    def cost(m):
        return seconds_on_every_row * (m / n) ** 1.1

    return schedule.candidate(*pair), cost


def test_the_baseline_is_fitted_on_every_row_wherever_they_fit_the_time_left(trec):
    """The TF-IDF baseline is the yardstick and, where no model beats it, the pick: it is not
    started small like a default; only where every row does not fit the time left is it fitted
    on the most rows that do."""
    search, schedule = _begin(trec, 1000, [("tfidf", "logreg")])
    base = schedule.queue[0]
    assert base.kind == "baseline" and base.name == TFIDF_BASELINE
    n, left = len(search.data.train), search.time.left()
    for seconds, rows in ((400.0, None), (0.9 * left, None), (1500.0, "fewer")):
        _cost(search, base.pair, rate=seconds / MARGIN / n ** 1.1, predict_rate=0.0)
        settle(base, rows=None)
        assert schedule.plans.estimate(base)
        if rows is None:  # more than `START_SHARE` of the time left, within it: every row
            assert base.rows is None and base.estimate == pytest.approx(seconds)
        else:
            assert MIN_ROWS < len(base.rows) < n and base.estimate <= left
            assert base.estimate > 0.9 * left * 0.9  # the most rows that fit, not a share


def test_a_default_too_dear_for_the_start_share_starts_on_the_largest_nested_subsample_that_fits(
        trec):
    """A default whose fit on every row costs more than `START_SHARE` of the time left starts on
    the largest stratified subsample that fits that share (at least `MIN_ROWS`); where that
    leaves less than a doubling to grow by, on every row, or the most rows that fit the time
    left."""
    search, schedule = _begin(trec, 1000, [("tfidf", "logreg")])
    share, n = START_SHARE * 1000, len(search.data.train)
    assert n == 4362

    c, cost = _sparse(search, schedule, 400.0)  # 100 s pay for 1,236 rows
    assert schedule.plans.estimate(c)
    best = int(n * (share / 400.0) ** (1 / 1.1))
    assert best - n // 100 <= len(c.rows) <= best
    assert np.array_equal(c.rows, search.data.sample_rows(len(c.rows)))  # nested, stratified
    assert c.estimate == pytest.approx(cost(len(c.rows))) and c.estimate <= share
    assert f"rows={len(c.rows)}" in c.label

    c, cost = _sparse(search, schedule, 1000.0)  # 1,000 rows need 198 s: at least `MIN_ROWS`
    assert schedule.plans.estimate(c) and len(c.rows) == MIN_ROWS
    assert c.estimate == pytest.approx(cost(MIN_ROWS)) and c.estimate > share

    c, cost = _sparse(search, schedule, 150.0)  # 3,018 rows fit the share: not half of them
    assert schedule.plans.estimate(c) and c.rows is None and c.estimate == pytest.approx(150.0)

    c, cost = _sparse(search, schedule, 50.0)  # fits the share on every row
    assert schedule.plans.estimate(c) and c.rows is None and c.estimate == pytest.approx(50.0)

    # 1,600 rows to train on: 1,000 are more than half of them, and all of them do not fit the
    # time left (1,500 s): the most rows that do
    search, schedule = _begin(trec.iloc[:2000], 1000, [("tfidf", "logreg")])
    n = len(search.data.train)
    assert n == 1600
    c, cost = _sparse(search, schedule, 1500.0)
    assert schedule.plans.estimate(c)
    most = int(n * (1000 / 1500.0) ** (1 / 1.1))
    assert most - n // 100 <= len(c.rows) <= most and cost(len(c.rows)) <= 1000

    # the order asks for it so, on the rows it starts on
    search, schedule = _begin(trec, 1000, [("tfidf", "logreg")])
    _prologue(search, schedule, 800, 700)
    _sparse(search, schedule, 1000.0)
    chosen = search.ask(schedule, "cores")
    assert chosen.pair == ("tfidf", "logreg") and len(chosen.rows) == MIN_ROWS


def test_a_scored_model_grows_to_growth_times_its_rows_keeping_the_rows_it_had(trec):
    """Once scored on a subsample, a model's next fit has `GROWTH` times its rows (its rows
    include the smaller fit's: the subsamples are nested), then every row; where a step does not
    fit the time left, the most rows that do, if that is still a step."""
    search, schedule = _begin(trec, 1000, [("tfidf", "logreg")])
    _prologue(search, schedule, 800, 700)
    c, cost = _sparse(search, schedule, 1000.0)
    first = search.ask(schedule, "cores")
    assert len(first.rows) == MIN_ROWS
    _scored(search, first, 850, fit=cost(MIN_ROWS) / MARGIN, measure=False)
    grown = schedule.growth("cores")
    assert len(grown) == 1 and grown[0].grown_from is first and grown[0].variant_of is None
    grown = grown[0]
    assert len(grown.rows) == GROWTH * MIN_ROWS and set(first.rows) <= set(grown.rows)
    assert np.array_equal(grown.rows, search.data.sample_rows(GROWTH * MIN_ROWS))
    assert grown.estimate == pytest.approx(cost(GROWTH * MIN_ROWS))
    assert grown.label == f"tfidf + logreg (rows={GROWTH * MIN_ROWS})"
    assert search.ask(schedule, "cores").key == grown.key  # the only option: it is asked for
    _scored(search, grown, 900, measure=False)
    last = schedule.plans.grown(grown)
    assert last.rows is None and last.grown_from is grown  # 9,000 rows: every one of 4,362
    assert last.estimate == pytest.approx(1000.0)

    # 600 s left: every row does not fit, and the most rows that do are not 1.5 times 3,000:
    # no step; from 1,000 rows, 3,000 do not fit either, the most that do (over 1,500) do
    search.time.clock = Paused(600)
    assert schedule.plans.grown(grown) is None
    smaller = schedule.plans.grown(first)
    assert smaller.estimate <= 600 and smaller.grown_from is first
    most = int(len(search.data.train) * 0.6 ** (1 / 1.1))
    assert most - len(search.data.train) // 100 <= len(smaller.rows) <= most
    assert set(first.rows) <= set(smaller.rows)


def test_a_grown_frozen_model_needs_a_pass_over_the_rows_not_encoded_yet_only(trec):
    """A frozen model on the prologue's subsample grows to `GROWTH` times its rows; before it
    fits, a pass encodes only the rows the cache does not hold yet (nested rows: its new ones),
    counted in its estimate, with no load."""
    search, schedule = _begin(trec, 1000, [("minilm", "logreg-cv")])
    _prologue(search, schedule, 800, 700, per_doc=0.035)
    frozen = search.ask(schedule, "cores")
    assert frozen.pair == ("minilm", "logreg-cv") and len(frozen.rows) == 1195
    _scored(search, frozen, 850)
    growth = {c.line().label: c for c in schedule.growth("cores")}
    assert set(growth) == {f"{MINILM_BASELINE} (rows=1195)", "minilm + logreg-cv (rows=1195)"}
    grown = growth["minilm + logreg-cv (rows=1195)"]  # the baseline grows too, on the same rows
    assert len(grown.rows) == GROWTH * 1195
    todo = schedule.plans.unencoded(grown)
    assert len(todo) == 2 * 1195 and set(todo) == set(search.data.train[grown.rows]) - set(
        search.data.train[frozen.rows])
    assert schedule.plans.pass_seconds(grown) == pytest.approx(MARGIN * 0.035 * 2 * 1195)
    assert grown.estimate == pytest.approx(MARGIN * 0.035 * 2 * 1195 + HEADS["logreg-cv"].cost
                                           * GROWTH * 1195 / 1000)
    job = search.ask(schedule, "cores")  # chosen: its pass first
    assert isinstance(job, Job) and (job.kind, job.about) == ("encode", "minilm")
    assert job.label == f"minilm: encoding {2 * 1195:,} documents"
    assert job.estimate == pytest.approx(MARGIN * 0.035 * 2 * 1195)
    _told(search, schedule, job, (len(todo), 0.035 * len(todo), todo))
    chosen = search.ask(schedule, "cores")
    assert chosen.key == grown.key and schedule.plans.pass_seconds(chosen) == 0.0
    # the MiniLM baseline grows the same way: a pass over its new rows (no registry step of its
    # own to prepare), then its fit on the vectors
    _scored(search, chosen, 820)
    baseline = next(c for c in schedule.growth("cores") if c.name == MINILM_BASELINE)
    assert baseline.encoder == "minilm" and len(schedule.plans.unencoded(baseline)) == 0
    schedule.tried |= {c.key for c in schedule.growth("cores") if c.name != MINILM_BASELINE}
    asked = search.ask(schedule, "cores")
    assert asked.key == baseline.key


def test_a_grown_model_is_worth_what_its_measured_curve_promises_over_the_best(trec):
    """The value of growing a model: its error shrinks as (work ratio) ** -`CURVE_EXPONENT`
    after one fit, as the exponent its last two fits measured after two; above the best single
    model's score (or its own, where it leads), else nothing."""
    search, schedule = _begin(trec, 1000, [("tfidf", "logreg")])
    _prologue(search, schedule, 700, 650)  # the baselines: 0.642 and 0.596
    c, cost = _sparse(search, schedule, 1000.0)
    first = search.ask(schedule, "cores")
    _scored(search, first, 800, measure=False)  # 0.734 on 1,000 rows
    (grown,) = schedule.growth("cores")
    ratio = (3000 / 1000) ** 1.1  # rows ** 1.1
    expected = 1 - (1 - 800 / 1090) * ratio ** -CURVE_EXPONENT
    assert schedule.curve_gain(grown) == pytest.approx(100 * (expected - 800 / 1090))
    assert schedule.gain(grown) == schedule.curve_gain(grown)
    assert 100 * (expected - 800 / 1090) == pytest.approx(3.03, abs=0.005)

    _scored(search, grown, 850, measure=False)  # 0.780 on 3,000 rows
    last = schedule.plans.grown(grown)
    exponent = -math.log((1 - 850 / 1090) / (1 - 800 / 1090)) / math.log(ratio)
    assert exponent == pytest.approx(0.157, abs=0.001)  # measured: flatter than 0.25
    expected = 1 - (1 - 850 / 1090) * (4362 / 3000) ** (1.1 * -exponent)
    assert schedule.curve_gain(last) == pytest.approx(100 * (expected - 850 / 1090))

    # a leader (here the MiniLM baseline, on its own) above what the curve promises: nothing
    leader = search.board.candidates[1]
    _scored(search, leader, 1000)
    assert schedule.curve_gain(last) == 0.0 and schedule.gain(last) == 0.0


def test_a_first_fine_tuning_fit_on_few_rows_a_class_is_valued_over_the_path_its_growth_takes(trec):
    """One point of a steep curve is not a verdict: a fine-tuned model's first fit on fewer than
    `FEW_ROWS_A_CLASS` rows a class is worth the best points a second of the steps its growth
    would take promise (each `GROWTH` times the work and seconds of the last, to every row,
    while the time left pays), its error shrinking with `FEW_ROWS_EXPONENT`; on more rows a class,
    or with time for one step only, its next step's alone."""

    def first_and_grown(seconds: float, rows: int):
        search, schedule = _begin(trec, seconds, [FINETUNE])
        leader = Candidate(name="leader", kind="baseline", tier="baselines")
        _scored(search, leader, 750, measure=False)  # 0.688
        first = _default(schedule, FINETUNE).but(rows=search.data.sample_rows(rows),
                                                 recipe={"head__epochs": 1})
        _scored(search, first, 600, measure=False)  # 0.550
        grown = first.but(grown_from=first, rows=search.data.sample_rows(min(3 * rows, 4362)),
                           estimate=10.0)
        return search, schedule, first, grown

    search, schedule, first, grown = first_and_grown(1000, 600)  # 100 rows a class
    assert schedule.uncertain(first) and len(first.rows) < FEW_ROWS_A_CLASS * 6

    def work(c):
        return work_of(c.build(), search.data.n_rows(c))

    def gain(ratio):
        return 100 * max(1 - (1 - 600 / 1090) * ratio ** -FEW_ROWS_EXPONENT - 750 / 1090, 0.0)

    step, most = work(grown) / work(first), work(first.but(rows=None)) / work(first)
    assert step == pytest.approx(3, rel=0.05) and most == pytest.approx(4362 / 600, rel=0.05)
    assert gain(step) == 0.0 and gain(most) == pytest.approx(6.5, abs=0.5)
    # the next step alone promises nothing; the path to every row (10 s, then 30 s) does
    assert schedule.curve_gain(grown) == pytest.approx(gain(most) / 40 * 10)
    assert schedule.gain(grown) == schedule.curve_gain(grown)

    # time for the next step only: that step's promise alone
    search, schedule, first, grown = first_and_grown(35, 600)
    assert schedule.uncertain(first) and schedule.curve_gain(grown) == 0.0
    # on 2,000 rows (333 a class) the first fit is read as today: `CURVE_EXPONENT`, one step
    search, schedule, first, grown = first_and_grown(1000, 2000)
    assert not schedule.uncertain(first) and schedule.curve_gain(grown) == 0.0


# -- the order ---------------------------------------------------------------------------------
def test_measured_evidence_replaces_a_tiers_prior_gain(questions):
    """Once one pair of a tier is scored, another pair of that tier is worth that pair's measured
    gain over the better baseline plus the difference of their declared priors, never below 0."""
    pairs = [("minilm", "logreg-cv"), ("minilm", "mlp"), ("mpnet", "logreg-cv")]
    search, schedule = _begin(questions, 300, pairs)
    _prologue(search, schedule, 48, 45)  # the better baseline: 0.8
    minilm, mlp, mpnet = (_default(schedule, p) for p in pairs)
    assert [schedule.declared(c) for c in (minilm, mlp, mpnet)] == [1.0, 1.0, 3.0]
    assert [schedule.gain(c) for c in (minilm, mlp, mpnet)] == [1.0, 1.0, 3.0]  # the priors
    _scored(search, minilm, 50)  # 0.833: 3.3 points over the better baseline
    assert schedule.gain(mpnet) == pytest.approx(100 * (50 - 48) / 60 + 3.0 - 1.0)
    assert schedule.gain(mlp) == pytest.approx(100 * (50 - 48) / 60)
    _scored(search, minilm, 42)  # 6 points below the better baseline: no gain left
    assert schedule.gain(mlp) == 0.0
    assert schedule.gain(mpnet) == 0.0  # -10 + 2 floored
    # one fitted on a quarter of the training rows is read at every row, as the baselines are
    # fitted: its error shrunk as the work of a fit (rows ** 1.1) to the power CURVE_EXPONENT
    settle(minilm, rows=search.data.sample_rows(len(search.data.train) // 4))
    _scored(search, minilm, 47)  # 0.783 on a quarter: 1.7 points below the better baseline
    at_every_row = 1 - (1 - 47 / 60) * (len(search.data.train) / len(minilm.rows)) ** (-1.1 * CURVE_EXPONENT)
    assert schedule.at_every_row(minilm) == pytest.approx(at_every_row) and at_every_row > 48 / 60
    assert schedule.gain(mlp) == pytest.approx(100 * (at_every_row - 48 / 60))
    # a variant is worth a share of its pair's prior (how near its pair is to the leader, its
    # `reach`, weighs it in the order)
    assert schedule.gain(minilm.but(variant_of=minilm)) == pytest.approx(1.0 * VARIANT_SHARE)


def test_the_order_is_the_most_expected_gain_per_second_and_a_default_too_dear_is_left_out(
        questions, monkeypatch):
    """Of the defaults waiting, `ask` returns the most expected gain per estimated second among
    those that fit; one that does not fit is left out, with the budget that would include it."""

    monkeypatch.setitem(HEADS, "mlp", dataclasses.replace(HEADS["mlp"], gain=3.0))
    pairs = [("tfidf", "logreg"), ("bow", "logreg"), ("tfidf", "mlp"), ("bow", "mlp")]
    lines = []
    search, schedule = _begin(questions, 300, pairs, lines)
    _prologue(search, schedule, 30, 29)
    for pair, seconds in zip(pairs, (10.0, 20.0, 20.0, 400.0), strict=True):
        _cost(search, pair, overhead=seconds / MARGIN, rate=0.0, predict_rate=0.0)
    order = []
    while (c := search.ask(schedule, "cores")) is not None and c.variant_of is None:
        order.append((c.pair, c.estimate))
        _scored(search, c, 33, fit=c.estimate / MARGIN, measure=False)  # 5 points over
    # 3 points expected in 20 s first; once it measured 5 points over the better baseline, the
    # other two are worth 5 + 1 - 3 = 3 points: the cheaper first
    assert order == [(("tfidf", "mlp"), pytest.approx(20.0)), (("tfidf", "logreg"), pytest.approx(10.0)),
                     (("bow", "logreg"), pytest.approx(20.0))]
    dear = _default(schedule, ("bow", "mlp"))
    assert dear.status == "left out" and dear in search.board.candidates
    assert dear.note == ("needs about 6.7 min, 5.0 min were left; a budget of about 6.7 min "
                         "would include it")
    assert any("left out bow + mlp: needs about 6.7 min" in line for line in lines)
    assert search.board.filling  # every default is done: the fill has begun
    assert c is not None and c.variant_of is not None


def test_when_the_last_defaults_waiting_do_not_fit_the_same_call_starts_the_fill(questions):
    """The last waiting defaults, all too dear for the time left, are left out and the call goes
    on to the variants: the search does not end with the budget unused."""
    pairs = [("tfidf", "logreg"), ("bow", "logreg")]
    search, schedule = _begin(questions, 30, pairs)
    _prologue(search, schedule, 30, 29)
    _cost(search, ("tfidf", "logreg"), overhead=1.0, rate=0.0, predict_rate=0.0)
    _cost(search, ("bow", "logreg"), overhead=40.0, rate=0.0, predict_rate=0.0)
    first = _scored(search, search.ask(schedule, "cores"), 40, measure=False)
    assert first.pair == ("tfidf", "logreg") and not search.board.filling
    found = search.ask(schedule, "cores")
    dear = _default(schedule, ("bow", "logreg"))
    assert dear.status == "left out" and dear.estimate == pytest.approx(50.0)
    assert found.variant_of is first and found.pair == first.pair and search.board.filling
    assert found.params and found.estimate == pytest.approx(MARGIN * 1.0)


def test_the_fill_gives_a_pair_far_below_the_leader_only_the_time_left_over(questions):
    """A pair within one standard error of the leader gets its variants' full value; one three
    or more below has no value of its own (`reach` 0), and its variants run only once none within
    reach fits: the time is not left idle (they may still join the ensemble)."""
    pairs = [("tfidf", "logreg"), ("bow", "logreg")]
    search, schedule = _begin(questions, 300, pairs)
    _prologue(search, schedule, 30, 29)
    near = search.ask(schedule, "cores")
    _scored(search, near, 54)  # 0.9, the leader
    far = search.ask(schedule, "cores")
    assert far.pair == ("bow", "logreg")
    _scored(search, far, 44)  # 0.733: four standard errors below
    se = schedule.noise(0.9)
    assert se == pytest.approx(math.sqrt(0.9 * 0.1 / 60)) and (0.9 - 44 / 60) / se > 4
    assert schedule.reach(near.pair) == 1.0 and schedule.reach(far.pair) == 0.0
    variants = schedule.variants("cores")
    close = [v for v in variants if v.pair == near.pair]
    below = [v for v in variants if v.pair == far.pair]
    assert len(close) == 11 and all(v.variant_of is near for v in close)  # 12 settings but its own
    assert len(below) == 1 and below[0].variant_of is far
    assert schedule.gain(close[0]) == VARIANT_SHARE * schedule.declared(near)
    order = []
    while (c := search.ask(schedule, "cores")) is not None:
        order.append(c.pair)
    assert order == [near.pair] * len(close) + [far.pair] * len(below)


def test_a_baseline_that_leads_gives_its_generalising_pair_the_reach(questions):
    """The plain TF-IDF baseline leading, the pair whose settings generalise it (`GENERALISES`)
    is within reach however far below its default scored: its settings (n-grams, min_df) vary."""
    pairs = [("tfidf", "logreg-cv"), ("bow", "logreg")]
    search, schedule = _begin(questions, 300, pairs)
    _prologue(search, schedule, 54, 40)  # the TF-IDF baseline: 0.9
    for c in (search.ask(schedule, "cores"), search.ask(schedule, "cores")):
        _scored(search, c, 40)
    assert schedule.reach(("tfidf", "logreg-cv")) == 1.0
    assert schedule.reach(("bow", "logreg")) == 0.0
    settings = {describe(v.params) for v in schedule.variants("cores") if v.pair[0] == "tfidf"}
    assert {"ngram_range=(1, 3)", "min_df=1"} <= settings


def test_a_representation_not_prepared_yet_counts_its_preparation_and_is_prepared_first(
        questions, monkeypatch):
    """A step whose one-time preparation (a distillation) is not on disk yet is estimated with it,
    without a probe; chosen, a "prepare" job comes first, and then the model itself."""
    from embedkit.representations import DistilledEmbedder

    monkeypatch.setattr(DistilledEmbedder, "ready", lambda self: False)  # an empty disk cache
    lines = []
    pair = ("minilm-static", "logreg-cv")
    search, schedule = _begin(questions, 900, [pair], lines)
    _prologue(search, schedule, 40, 38)
    c = _default(schedule, pair)
    job = search.ask(schedule, "cores")
    setup = REPRESENTATIONS["minilm-static"].setup
    assert c.estimate == pytest.approx(setup + c.prior) and not search.costs[pair].measured
    # its prior is on every row: a subsample's is as much smaller (on 1,000 of 998,000 rows a
    # static default was said to need 54.9 minutes, most of them for rows it would not read)
    n = len(search.data.train)
    half = c.but(rows=search.data.sample_rows(n // 2))
    assert schedule.plans.cost(half) == pytest.approx(setup + c.prior * len(half.rows) / n)
    assert isinstance(job, Job) and (job.kind, job.about, job.estimate) == (
        "prepare", "minilm-static", setup)
    search.tell(schedule, job, None)
    assert any("minilm-static: prepared once (kept on disk for every later run)" in line
               for line in lines)
    assert search.ask(schedule, "cores") is c and c.estimate == pytest.approx(c.prior)


# -- a head that sizes itself: fine-tuning -----------------------------------------------------
def test_a_fine_tuning_default_starts_on_the_richest_recipe_that_fits_the_start_share(questions):
    """Measured, a fine-tuning default gets the richest recipe that fits `START_SHARE` of the time
    left (less the moment a decision takes), valued at the share of the gain it keeps; where none
    does, its cheapest, if that fits the time left."""
    search, schedule = _begin(questions, 300, [FINETUNE])
    c = _default(schedule, FINETUNE)
    head = schedule.plans.head(c)
    assert (int(head.max_length), int(head.epochs), int(head.k)) == (32, 2, 6)  # short questions
    share = START_SHARE * 300 - DECIDING

    _measured(search, schedule, FINETUNE, 25.0)  # its own recipe fits the share
    assert schedule.plans.estimate(c)
    assert c.recipe == {"head__max_length": 32, "head__epochs": 2, "head__k": 6} and c.rows is None
    assert c.estimate == pytest.approx(25.0) and c.share == 1.0 and c.seed == 0
    assert schedule.gain(c) == 4.0  # the fine-tuning tier's
    assert c.least == pytest.approx(25.0 * 0.5 * 0.7)  # one epoch, three of six blocks trained

    _measured(search, schedule, FINETUNE, 50.0)  # one epoch of it fits
    assert schedule.plans.estimate(c) and c.recipe["head__epochs"] == 1 and c.recipe["head__k"] == 6
    assert c.estimate == pytest.approx(25.0) and c.estimate <= share
    assert c.share == pytest.approx(0.5 ** WORK_EXPONENT)
    assert schedule.gain(c) == pytest.approx(4.0 * 0.5 ** WORK_EXPONENT)

    _measured(search, schedule, FINETUNE, 100.0)  # nothing fits the share: the cheapest
    assert schedule.plans.estimate(c)
    assert (c.recipe["head__epochs"], c.recipe["head__k"], c.rows) == (1, 3, None)
    assert c.estimate == pytest.approx(35.0) and c.truncated == ""
    assert c.share == pytest.approx(0.35 ** WORK_EXPONENT)

    _measured(search, schedule, FINETUNE, 1000.0)  # not even that fits 300 s: left out
    search.leave_out(decision := schedule.plans.estimate(c))  # the plans decide, the engine records
    assert isinstance(decision, LeaveOut) and c.status == "left out" and c.note == (
        "one fit needs about 16.7 min (measured on itself here), 5.0 min were left (nor its "
        "cheapest recipe, one epoch on "
        "240 rows); a budget of about 16.7 min would include the full recipe")


def test_a_fine_tuning_recipe_cuts_epochs_blocks_and_rows_before_it_reads_fewer_word_pieces(news):
    """On documents that need 256 word pieces, a recipe cut to the time left first drops epochs,
    then blocks, then rows (down to `MIN_ROWS`), all at the length the documents need; only when
    none of those fits is it cut to `SHORT_LENGTH` word pieces, and the candidate says so."""
    search, schedule = _begin(news, 300, [FINETUNE])
    c = _default(schedule, FINETUNE)
    head = schedule.plans.head(c)
    n = len(search.data.train)
    assert int(head.max_length) == 256 and n == 1780

    def batches(rows):
        return math.ceil(rows / 32)

    # 29 s of the share; one epoch of three blocks on every row costs 0.35 of the own recipe's
    # (56 batches), one epoch of six at 64 word pieces 0.125 of it
    _measured(search, schedule, FINETUNE, 120.0)  # 42 s: 38 batches of it, the length kept
    assert schedule.plans.estimate(c)
    assert c.recipe == {"head__max_length": 256, "head__epochs": 1, "head__k": 3}
    rows = len(c.rows)
    assert MIN_ROWS <= rows < n and batches(rows) == 38 and c.truncated == ""
    assert c.estimate <= START_SHARE * 300 - DECIDING
    assert c.least == pytest.approx(120.0 * 0.35 / 4 * 32 / 56)  # 64 pieces, 1,000 rows

    # 400 s: three blocks need 80 s on 1,000 rows; 64 word pieces on every row 50 s with six
    # blocks, 35 s with three: those on 46 batches
    _measured(search, schedule, FINETUNE, 400.0)
    assert schedule.plans.estimate(c)
    assert c.recipe == {"head__max_length": SHORT_LENGTH, "head__epochs": 1, "head__k": 3}
    assert batches(len(c.rows)) == 46
    assert c.truncated == ("read to 64 word pieces where 95% of the documents need 256: the time "
                           "left paid for no more")
    assert "max_length=64" in c.label


def test_the_fine_tuning_ladder_cuts_epochs_then_blocks_then_rows_then_length():
    """`sized_for`: the richest recipe that fits, keeping the documents' length (its own epochs;
    one epoch; half the blocks; fewer rows down to `MIN_ROWS`) before cutting it to
    `SHORT_LENGTH` word pieces (then the same cuts again)."""
    head = HEADS["finetune-short"].factory().set_params(max_length=128)

    def cost(work):  # one second a unit of work
        return work

    # 3,200 rows are 100 batches: 2 epochs at 128 = 400 units; 1 epoch 200; half the blocks
    # frozen 140 (1.4 a batch); at 64 pieces 100, and 70 with half the blocks
    assert head.sized_for(3200, 450, cost) == ({"epochs": 2, "k": 6}, 3200)
    assert head.sized_for(3200, 250, cost) == ({"epochs": 1, "k": 6}, 3200)
    assert head.sized_for(3200, 150, cost) == ({"epochs": 1, "k": 3}, 3200)
    assert head.sized_for(3200, 80, cost) == ({"epochs": 1, "k": 3}, 57 * 32)  # 57 batches
    assert head.sized_for(3200, 50, cost) == ({"epochs": 1, "k": 3}, 35 * 32)
    # 1,000 rows at 128 pieces need 44.8: only now the length is cut
    assert head.sized_for(3200, 40, cost) == ({"epochs": 1, "k": 3, "max_length": 64}, 57 * 32)
    assert head.sized_for(3200, 20, cost) is None  # not even 1,000 rows at 64


def test_a_fine_tuning_fits_memory_is_declared_before_any_load_and_its_batch_halved_to_fit():
    """`fit_memory` (issue 60), from the encoder's config alone: the packaged MiniLM's 22.7
    million weights at `TRAINED_WEIGHT_BYTES` each trained (`FROZEN_WEIGHT_BYTES` frozen), what
    its trained blocks keep for the backward pass, linear in the batch, between linear and
    quadratic in the length (the attention weights), and `FIT_OVERHEAD`; `batched_for` halves the
    batch and doubles the accumulation (the same documents an update, the same work) until the
    fit fits the room, None where one document a batch does not; SetFit, whose steps draw its
    pairs, only says whether its own batch fits. (How close this comes to measured fits:
    `pipelines/benchmarks/bench_memory.py`.)"""
    from embedkit.heads import SetFitClassifier, TransformerClassifier
    from embedkit.heads.finetune.sizing import (
        FIT_OVERHEAD,
        FROZEN_WEIGHT_BYTES,
        TRAINED_WEIGHT_BYTES,
        parameters,
    )

    tables, blocks = parameters("all-minilm-l6-v2")
    assert tables + blocks == pytest.approx(22.7e6, rel=0.01)  # all-MiniLM-L6-v2's published size
    assert sum(parameters("all-mpnet-base-v2")) == pytest.approx(109.5e6, rel=0.01)
    head = TransformerClassifier(max_length=128, batch_size=16)
    weights = TransformerClassifier(max_length=128, batch_size=16, fine_tune="none").fit_memory()
    assert weights == pytest.approx(FIT_OVERHEAD + FROZEN_WEIGHT_BYTES * 22.7e6, rel=0.01)  # nothing kept
    trained = FIT_OVERHEAD + TRAINED_WEIGHT_BYTES * (tables + blocks)
    active = head.fit_memory() - trained
    assert 0 < active < trained
    doubled = head.set_params(batch_size=32).fit_memory() - trained
    assert doubled == pytest.approx(2 * active)
    longer = head.set_params(batch_size=16, max_length=256).fit_memory() - trained
    assert 2 * active < longer < 4 * active  # the attention weights grow with its square
    assert TransformerClassifier(fine_tune="last_k", k=3).fit_memory() < TransformerClassifier().fit_memory()

    head = TransformerClassifier(max_length=256, batch_size=16)
    assert head.batched_for(head.fit_memory()) == {}
    room = (clone(head).set_params(batch_size=8).fit_memory()
            + clone(head).set_params(batch_size=4).fit_memory()) / 2
    assert head.batched_for(room) == {"batch_size": 4, "gradient_accumulation": 4}
    assert clone(head).set_params(batch_size=4).fit_memory() <= room < clone(head).set_params(
        batch_size=8).fit_memory()
    assert head.batched_for(clone(head).set_params(batch_size=1).fit_memory() - 1) is None
    assert TransformerClassifier(batch_size=8, gradient_accumulation=2).batched_for(
        TransformerClassifier(batch_size=2).fit_memory()) == {"batch_size": 2, "gradient_accumulation": 8}

    pairs = SetFitClassifier(model="all-mpnet-base-v2", max_length=64, batch_size=16)
    assert pairs.fit_memory() == pytest.approx(
        TransformerClassifier(model="all-mpnet-base-v2", max_length=64, batch_size=32).fit_memory())
    assert pairs.batched_for(pairs.fit_memory()) == {}
    assert pairs.batched_for(pairs.fit_memory() - 1) is None


def test_a_cut_recipe_keeps_a_concave_share_of_the_gain_and_a_subsample_its_examples_per_class():
    """A recipe cut to the time left keeps (its work / its own recipe's) ** `WORK_EXPONENT` of the
    head's gain, on every row; a subsample keeps it all while it holds `ROWS_PER_CLASS` rows a
    class, in proportion below."""
    head = HEADS["finetune-short"].factory().set_params(max_length=128)  # 2 epochs, 6 blocks of 6
    assert head.gain_share({"epochs": 2, "k": 6}, 3200, 3200, 2) == 1.0
    half = 0.5 ** WORK_EXPONENT
    assert head.gain_share({"epochs": 1, "k": 6}, 3200, 3200, 2) == pytest.approx(half)
    assert 0.8 < half < 0.9  # one epoch of two keeps most of the gain, not half of it
    cheapest = {"epochs": 1, "max_length": 64, "k": 3}
    assert head.gain_share(cheapest, 3200, 3200, 2) == pytest.approx((0.5 * 0.5 * 0.7) ** WORK_EXPONENT)
    assert ROWS_PER_CLASS == 500
    assert head.gain_share({"epochs": 1, "k": 6}, 1000, 3200, 2) == pytest.approx(half)
    assert head.gain_share({"epochs": 1, "k": 6}, 500, 3200, 2) == pytest.approx(half / 2)
    assert head.gain_share({"epochs": 1, "k": 6}, 1200, 1800, 6) == pytest.approx(half * 2 / 3)
    # the cheapest recipe: one epoch, half the blocks, 64 word pieces, on 1,000 rows
    assert head.least_work(3200) == pytest.approx(head.set_params(**cheapest).fit_work(1000))


def test_an_unmeasured_fine_tuning_with_nothing_to_scale_from_is_probed_once_chosen(questions):
    """Before anything measured a training step on this machine (the encoder failed to load:
    no pass to bound it), fine-tuning is estimated as its probe and the registry's prior; chosen,
    its probe (a job on its lane) comes first, and once it measured the pair, the recipe is
    sized on it."""
    lines = []
    search, schedule = _begin(questions, 300, [FINETUNE], lines)
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 40))
    load = search.ask(schedule, "cores")
    search.tell(schedule, load, OSError("weights unreadable"))  # no pass, no MiniLM baseline
    assert any("frozen encoder: minilm: failed (weights unreadable)" in line for line in lines)
    probe = search.ask(schedule, "cores")
    c = _default(schedule, FINETUNE)
    assert isinstance(probe, Job) and (probe.kind, probe.about, probe.lane) == (
        "probe", FINETUNE, "cores")
    # worth, until measured, the probe and its cheapest recipe's prior (all 240 rows: fewer
    # than `MIN_ROWS`)
    assert probe.estimate == c.estimate == pytest.approx(
        MIN_PROBE_SECONDS + HEADS["finetune-short"].cost * 240 / 1000)
    assert c.status == "waiting" and not search.costs[FINETUNE].measured
    # what the probe's run does: the pair's state learns the step
    _cost(search, FINETUNE, overhead=2.0, rate=1.0, predict_rate=0.0)
    search.tell(schedule, probe, "fine-tuning probe: 0.50 s a step of 32 at max_length 32")
    assert any("fine-tuning probe: 0.50 s a step" in line for line in lines)
    chosen = search.ask(schedule, "cores")
    assert chosen is c and c.recipe["head__epochs"] == 2  # 2 + 8 units: 12.5 s
    assert c.estimate == pytest.approx(MARGIN * (2.0 + 8.0))


def test_fine_tuning_that_even_the_pass_bound_cannot_fit_is_left_out_without_a_probe(questions):
    """Before fine-tuning is measured, the encoder's measured pass bounds its cost from below (a
    training step is its batch's forward pass over the forward share): where even that bound's
    cheapest recipe and the probe do not fit, fine-tuning is left out unmeasured, with the budget
    that would include it."""
    from embedkit.heads.finetune.sizing import FORWARD_SHARE

    search, schedule = _begin(questions, 30, [FINETUNE])
    _prologue(search, schedule, 40, 38, per_doc=0.039)  # MiniLM's pass over long reviews
    c = _default(schedule, FINETUNE)
    head = schedule.plans.head(c)
    state, source = schedule.plans.from_pass(head)
    assert state.rate == pytest.approx(0.039 * 32 * 64 / int(head.max_length) / FORWARD_SHARE)
    assert state.overhead == 0.0 and "the encoder's measured pass" in source
    assert search.ask(schedule, "cores") is None
    assert c.status == "left out" and "here (the encoder's measured pass, 1.0x its compute" in c.note
    assert "a budget of about" in c.note and not search.costs[FINETUNE].measured  # no probe


def test_setfit_is_probed_on_every_row_cut_to_a_few_steps_then_sized_by_its_steps(questions):
    """SetFit draws its pairs from every row, so no slice measures its step: its probe is fits
    on every row cut to a few steps (on the encoder's measured pass a first guess of its 400
    steps' five folds fitted the start share: they took six minutes). Once the probe measured
    it, it is sized to the most steps that fit the time, counting each fold's fit under
    cross-validation; grown, it gets more steps."""
    rows = _slice(questions, 200)  # scored by 5-fold cross-validation
    search, schedule = _begin(rows, 300, [SETFIT], validation="auto")
    assert search.data.fits_each == 5 and len(search.data.train) == 200
    _prologue(search, schedule, 30, 35, per_doc=0.001)
    probe, c = search.ask(schedule, "cores"), _default(schedule, SETFIT)
    assert isinstance(probe, Job) and (probe.kind, probe.about) == ("probe", SETFIT)
    head = schedule.plans.head(c)
    assert [head.probe_recipe(k, 200) for k in (1, *PROBE_STEPS)] == [
        ({"max_steps": k}, 200) for k in (1, *PROBE_STEPS)]  # every row, a few steps
    assert probe.estimate == c.estimate and not search.costs[SETFIT].measured
    # what the probe's run does: the pair's state learns the step (a second a unit of work)
    _cost(search, SETFIT, overhead=2.0, rate=0.05, predict_rate=0.0)
    search.tell(schedule, probe, "contrastive tuning probe: measured")
    assert search.ask(schedule, "cores") is c
    steps = c.recipe["head__max_steps"]
    own = head.sized_for(160, math.inf, lambda work: 0.0)[0]["max_steps"]
    assert 40 <= steps < own == 400  # a fold's 160 rows draw 12,800 pairs: max_steps binds

    def seconds(steps):  # five folds' fits on 160 of the 200 rows, at the margin
        return MARGIN * (2.0 + 0.05 * 5 * clone(head).set_params(max_steps=steps).fit_work(160))

    assert c.estimate == pytest.approx(seconds(steps))
    assert seconds(steps) <= START_SHARE * search.time.left() - DECIDING < seconds(steps + 1)

    _scored(search, c, 50, fit=2 * c.estimate, measure=False)  # twice what the bound promised
    search.costs[SETFIT].observe(5 * work_of(c.build(), search.data.n_rows(c)), c.fit_seconds)
    grown = schedule.plans.grown(c)
    assert grown.recipe["head__max_steps"] > steps and grown.grown_from is c

    # picked, its refit is one fit on the 200 rows: it gets back the steps the folds cut, as many
    # as the time given pays for with the margin of a first fit (a recipe never fitted; a trec
    # refit sized at the refit's 1.1 ran past the deadline and the pick stayed a fold's fit),
    # its own where that pays for them
    assert c.share < 1
    full = Finish.restored(search, c, math.inf)
    assert full.recipe["head__max_steps"] == own and full.share == 1.0 and full.seed == c.seed
    state = search.costs[SETFIT]
    assert Finish.restored(search, c, state.seconds(work_of(full.build(), 200))).share == 1.0
    short = Finish.restored(search, c, state.seconds(work_of(full.build(), 200), margin=REFIT_MARGIN))
    assert steps < short.recipe["head__max_steps"] < own
    some = Finish.restored(search, c, state.seconds(work_of(full.build(), 200)) / 2)
    assert steps < some.recipe["head__max_steps"] < own
    assert Finish.restored(search, c, state.overhead) is c  # too little time: as scored
    search.data.folds = None  # rows held out: the cut was the budget's, not the folds'
    assert Finish.restored(search, c, math.inf) is c


def test_setfits_probe_runs_fits_on_every_row_cut_to_a_few_steps(questions):
    """The probe's run, for real: SetFit fitted on every row at 1 (untimed), 2 and 6 steps; the
    pair's state learns a step and the load, and the log says them."""
    search, schedule = _begin(_slice(questions, 40), 300, [SETFIT], validation="auto")
    _prologue(search, schedule, 30, 35, per_doc=0.001)
    probe = search.ask(schedule, "cores")
    assert (probe.kind, probe.about) == ("probe", SETFIT)
    said = probe.run()
    state = search.costs[SETFIT]
    assert state.measured and state.fits == 2 and state.rate > 0 and state.overhead >= 0
    assert said.startswith("contrastive tuning probe: ") and " s a step of 16 at max_length " in said


@pytest.mark.parametrize(("pair", "longer", "steps"), [
    (SETFIT, {"head__max_steps": 400}, 400),
    (FINETUNE, {"head__epochs": 100}, 300)])  # 3 batches of 16 an epoch
def test_a_refit_given_a_deadline_ends_its_training_in_time_and_keeps_what_it_reached(
        questions, pair, longer, steps):
    """The refit of a pick is stopped at the deadline and, stopped, would keep the fold's fit on
    fewer rows (trec at 16 a class: 83.8% where SetFit's refit on every row, in time, gave
    92.0%). A head that takes ``max_seconds`` (SetFit, fine-tuning) is told to end its training
    in time instead: the refit ends within its seconds, its training cut, the model fitted on
    every row; the limit is not left on the saved model, and the pair's rate does not learn
    from the cut work."""
    search, schedule = _begin(_slice(questions, 40), 300, [pair], validation="auto")
    c = _default(schedule, pair).but(params=longer)
    _cost(search, pair, overhead=1.0, rate=0.05, predict_rate=0.01)
    lines = []
    began = time.monotonic()
    label, model, took = Finish.refit(search, c, search.time.clock, lines.append, seconds=12.0)
    assert took <= time.monotonic() - began < 12.0 + 3.0  # every step would take minutes here
    head = model.named_steps["head"]
    assert head.out_of_time_ and 1 <= head.n_steps_ < steps and head.max_seconds is None
    assert len(model.predict(search.data.docs[:5])) == 5
    assert re.search(r"refit .* on all 40 documents \(\d+ s; its training stopped in time, after "
                     r"\d+ steps\)$", lines[-1]), lines
    assert search.costs[pair].rate == 0.05 and search.costs[pair].fits == 0


@pytest.mark.parametrize(("pair", "training"), [(FINETUNE, 60.0 - MARGIN * 1.0),
                                                (SETFIT, 60.0 - MARGIN * (1.0 + 0.5 * 40))])
def test_a_refit_leaves_the_training_all_but_what_its_fit_does_after_it(questions, pair, training):
    """A refit given 60 s, its pair's load measured at 1 s and a prediction at 0.5 s a document:
    SetFit's fit passes its tuned encoder over all 40 documents after its training, so its
    training gets what that pass leaves; a fine-tuned model's fit ends with its training, which
    gets all but the load. Before, fine-tuning's training was also cut by a pass it never makes:
    on nyt-editorials (seed 2) fine-tuned mpnet's refit on 3,902 documents stopped after 59 of
    its 122 steps, with 136 s of the budget left unused."""
    search, schedule = _begin(_slice(questions, 40), 300, [pair], validation="auto")
    c = _default(schedule, pair)
    _cost(search, pair, overhead=1.0, rate=0.05, predict_rate=0.5)
    head = c.build().named_steps["head"]
    assert len(search.data.docs) == 40
    assert Finish.training_seconds(search, c, head, 60.0) == pytest.approx(training)
    _cost(search, pair, overhead=1.0, rate=0.05)  # its prediction never measured: a tenth kept
    assert Finish.training_seconds(search, c, head, 60.0) == pytest.approx(54.0)


def test_a_probe_that_runs_past_the_time_left_is_stopped_and_learns_its_cost_is_at_least_that(
        trec, monkeypatch):
    """A model's probe on a slice (NBSVM + logreg-cv, 400 of 4,000 training rows) is stopped
    once it has run the time left (on 20newsgroups at two minutes such a probe ran 220 s past
    the deadline): its pair learns the seconds it ran as the slice's cost, so every row's fit
    is estimated far beyond the time left."""
    search, schedule = _begin(_slice(trec, 5000), 300, [("nbsvm", "logreg-cv")])
    c = schedule.candidate("nbsvm", "logreg-cv")
    # the least a deadline stops at (`embedkit._stopping.deadline`); 400 rows take many times
    # that even on a fast machine, where a probe on 160 once ended in time and failed this test
    left = 0.1
    monkeypatch.setattr(search.time, "left", lambda: left)
    began = time.monotonic()
    estimate = search.probe(c)
    ran = time.monotonic() - began
    assert left <= ran < left + 2.0 and search.costs[c.pair].measured
    assert estimate > 5 * left  # 400 rows took at least that: 4,000 take ten times that or more


def test_a_seed_whose_refit_runs_past_the_time_left_is_stopped_and_dropped(questions):
    """A fine-tuned member's next seed is refit where its measured cost fits the time left; an
    hour slower than measured (here: its seed claims 0.5 s, its recipe takes minutes) is stopped
    at the time left and that seed dropped, the seeds refit before it kept, none added after."""
    search, schedule = _begin(_slice(questions, 40), 300, [FINETUNE], validation="auto")
    c = _default(schedule, FINETUNE).but(params={"head__epochs": 100}, seed=0)
    fitted, lines = [[(c.label, None, 0.5)]], []
    began = time.monotonic()
    search.finish.more_seeds(search, [(c, 1.0)], fitted, Clock(6.0), lines.append)
    assert time.monotonic() - began < 6.0 + 3.0
    assert fitted == [[(c.label, None, 0.5)]]
    assert re.search(r"dropped seed 1 of finetune-short .*: its refit was stopped \(stopped after "
                     r"\d+ s, at its deadline\)$", lines[-1]), lines


def test_a_model_whose_first_fold_shows_its_folds_would_not_end_in_time_is_left_out_measured(
        questions, monkeypatch):
    """Under cross-validation a model stops after its first fold where the folds would run past
    the time left (its prior may be far off: NBSVM's width grows with the classes); it is left
    out saying so, and its pair has learnt what a fit costs."""
    search, schedule = _begin(_slice(questions, 100), 300, [("tfidf", "logreg-cv")],
                              validation="auto")
    c = schedule.candidate("tfidf", "logreg-cv")
    settle(c, estimate=0.5)
    monkeypatch.setattr(search.time, "left", lambda: 1e-4)  # less than any fold takes
    search.submit(c)
    search.collect(schedule, block=True)
    assert c.status == "left out" and c.note.startswith("its first fold took ")
    assert ": its 5 need about " in c.note and "a budget of about" in c.note
    assert search.costs[c.pair].measured and search.costs[c.pair].fits == 1


def test_under_cross_validation_setfits_folds_leave_the_time_of_its_own_refit(questions):
    """The folds only score SetFit; its refit on every document is the model a user gets. Where
    its five folds cannot all run its own recipe, they are cut to what leaves the time of that
    refit, and the finish then refits it on its own recipe (on 64 rotten-tomatoes sentences the
    folds took 228 s of 300 and the pick was kept as one fold's fit on 51 of them)."""
    search, schedule = _begin(_slice(questions, 200), 300, [SETFIT], validation="auto")
    _prologue(search, schedule, 30, 35, per_doc=0.001)
    probe = search.ask(schedule, "cores")
    _cost(search, SETFIT, overhead=2.0, rate=0.2, predict_rate=0.0)
    search.tell(schedule, probe, "contrastive tuning probe: measured")
    c = search.ask(schedule, "cores")
    head, state = schedule.plans.head(c), search.costs[SETFIT]
    refit = state.seconds(head.fit_work(200))  # its own 400 steps once, with the margin
    assert schedule.plans.refit_kept(head, state) == refit
    assert 40 < c.recipe["head__max_steps"] < 400 and c.share < 1
    assert c.estimate + refit <= search.time.left() - DECIDING  # the folds leave the refit its time
    _scored(search, c, 50, fit=c.estimate, measure=False)
    full = Finish.restored(search, c, search.time.left() - c.estimate)
    assert full.recipe["head__max_steps"] == 400 and full.share == 1.0
    search.data.folds = None  # rows held out: its fit is the model, nothing is kept back
    assert schedule.plans.refit_kept(head, state) == 0.0


def test_setfits_cheapest_folds_are_not_given_up_for_the_time_of_its_refit(questions, monkeypatch):
    """Where its cheapest folds fit the time left only without its own refit's time beside them,
    they run (the finish refits what the time then left pays for): at 32 a class of
    disaster-tweets SetFit was left out whole where the two together fell within a second of the
    time left."""
    def planned(left: float):
        search, schedule = _begin(_slice(questions, 200), 300, [SETFIT], validation="auto")
        _prologue(search, schedule, 30, 35, per_doc=0.001)
        probe = search.ask(schedule, "cores")
        _cost(search, SETFIT, overhead=2.0, rate=0.2, predict_rate=0.0)
        search.tell(schedule, probe, "contrastive tuning probe: measured")
        monkeypatch.setattr(search.time, "left", lambda: left)
        return search.ask(schedule, "cores"), schedule.plans, search

    c, plans, search = planned(300.0)
    refit = plans.refit_kept(plans.head(c), search.costs[SETFIT])
    both = c.least + refit  # its cheapest folds and its refit
    for left in (both - 0.5 * DECIDING, both - 3 * DECIDING, c.least + 2 * DECIDING):
        c, _, _ = planned(left)
        assert c is not None and c.recipe["head__max_steps"] >= 40, left
        assert c.estimate <= left - DECIDING


def test_a_setfit_whose_first_fold_outran_its_probe_is_sized_again_on_the_fold(questions):
    """A default that sizes itself and stopped after its first fold (the folds' fits outran its
    probe) is not left out: it waits again and is sized anew on what the fold measured; where
    not even its least fits then, its plan leaves it out saying so."""
    from embedkit.tuning._candidate import FoldsTooDear

    lines = []
    search, schedule = _begin(_slice(questions, 200), 300, [SETFIT], lines, validation="auto")
    _prologue(search, schedule, 30, 35, per_doc=0.001)
    probe = search.ask(schedule, "cores")
    _cost(search, SETFIT, overhead=2.0, rate=0.05, predict_rate=0.0)
    search.tell(schedule, probe, "contrastive tuning probe: measured")
    c = search.ask(schedule, "cores")
    first = c.recipe["head__max_steps"]
    _cost(search, SETFIT, overhead=2.0, rate=0.2, predict_rate=0.0)  # 4x the probe's
    search.tell(schedule, c, FoldsTooDear(4 * c.estimate / 5, 5, search.time.left()))
    assert c.status == "waiting" and any(f"{c.label}: its first fold took " in line
                                         and line.endswith(": sized again on what it measured")
                                         for line in lines)
    assert search.ask(schedule, "cores") is c and c.recipe["head__max_steps"] != first
    head, steps = schedule.plans.head(c), c.recipe["head__max_steps"]
    assert c.estimate == pytest.approx(  # sized on the dearer rate the fold measured
        MARGIN * (2.0 + 0.2 * 5 * clone(head).set_params(max_steps=steps).fit_work(160)))
    _cost(search, SETFIT, overhead=2.0, rate=50.0, predict_rate=0.0)  # 40 steps: hours
    search.tell(schedule, c, FoldsTooDear(600.0, 5, search.time.left()))
    assert search.ask(schedule, "cores") is None and c.status == "left out"
    assert "nor its cheapest recipe, 40 steps of 16 pairs" in c.note


def test_under_cross_validation_no_variant_is_tried(questions):
    """Scores on fewer than `CV_ROWS` rows cannot tell a variant's share of a point from their
    noise: a scored default has variants where rows are held out, none under cross-validation."""
    pair = ("tfidf", "logreg-cv")
    for validation, some in ((0.2, True), ("auto", False)):
        search, schedule = _begin(_slice(questions, 200), 300, [pair], validation=validation)
        _scored(search, _default(schedule, pair), 30)
        assert bool(schedule.variants("cores")) is some, validation


def test_setfit_keeps_its_own_worth_whatever_classifier_fine_tuning_scored(questions):
    """SetFit is a tier of its own: a fine-tuned classifier far below the baselines (as on few
    labels) leaves SetFit's expected gain its prior, and lowers its own tier's."""
    search, schedule = _begin(_slice(questions, 200), 300, [SETFIT, FINETUNE, MPNET],
                              validation="auto")
    _prologue(search, schedule, 120, 140)
    _scored(search, _default(schedule, FINETUNE), 40)
    setfit, mpnet = _default(schedule, SETFIT), _default(schedule, MPNET)
    settle(setfit, share=1.0)
    settle(mpnet, share=1.0)
    assert setfit.tier == "contrastive tuning" and schedule.gain(setfit) == 2.0
    assert schedule.gain(mpnet) == 0.0  # 50 points below the baseline, +2 in priors


def test_a_base_size_encoder_is_scaled_from_the_measured_one_fetched_then_probed_once_chosen(
        questions, monkeypatch):
    """all-mpnet-base-v2 fine-tuned, before it is fetched or measured, is estimated as its fetch,
    its probe and its recipe at MiniLM's measured cost times their compute ratio (8: twice the
    blocks, twice the width, from the shapes the resources declare), expected (no margin: its
    probe measures it before a fit is sized); nothing is fetched to know it. Chosen, a "prepare"
    job fetches it, then a probe measures it."""
    from embedkit.heads import TransformerClassifier
    from embedkit.storage import resources

    monkeypatch.setattr(TransformerClassifier, "ready",  # as on a machine without it
                        lambda self: str(self.model) != "all-mpnet-base-v2")
    monkeypatch.setattr(resources, "fetch", lambda *a, **k: pytest.fail("fetched to estimate"))
    lines = []
    search, schedule = _begin(questions, 600, [FINETUNE, MPNET], lines)
    base = HEADS["finetune-mpnet"].factory().set_params(max_length=32)  # the data's length
    search.costs[MPNET].set_head(base)  # its tokenizer is not read: nothing to fetch
    _prologue(search, schedule, 40, 38)
    _cost(search, FINETUNE, overhead=2.0, rate=0.5)
    short = search.ask(schedule, "cores")
    assert short.pair == FINETUNE  # cheaper per point
    mpnet = _default(schedule, MPNET)
    state, source = schedule.plans.scaled(mpnet, base)
    assert (state.overhead, state.rate, state.margin) == (16.0, 4.0, 1.0)
    assert source == "scaled from finetune-short's measured step by its 8.0x compute"
    n, valid = len(search.data.train), len(search.data.valid)
    fit = state.seconds(base.fit_work(n), valid, base.predict_work(valid))
    one = clone(base).set_params(epochs=1)
    probe = sum(16.0 + 4.0 * one.fit_work(steps * 32) for steps in (1, *PROBE_STEPS))
    setup = HEADS["finetune-mpnet"].setup
    assert mpnet.estimate == pytest.approx(setup + probe + fit)
    assert mpnet.recipe["head__epochs"] == 2 and mpnet.status == "waiting"
    assert not search.costs[MPNET].measured

    _scored(search, short, 50, measure=False)  # its cost stays the one measured above
    job = search.ask(schedule, "cores")  # chosen: fetched first
    assert isinstance(job, Job) and (job.kind, job.about, job.estimate) == (
        "prepare", "finetune-mpnet", setup)
    search.tell(schedule, job, None)
    assert any("finetune-mpnet: prepared once" in line for line in lines)
    probe_job = search.ask(schedule, "cores")  # then measured on its device
    assert (probe_job.kind, probe_job.about) == ("probe", MPNET)
    assert probe_job.estimate == pytest.approx(probe + fit)  # fetched: its setup no longer counts
    _cost(search, MPNET, overhead=10.0, rate=5.0, predict_rate=0.0)
    search.tell(schedule, probe_job, "fine-tuning probe: measured")
    chosen = search.ask(schedule, "cores")
    assert chosen is mpnet and chosen.estimate <= START_SHARE * 600


def test_a_fine_tuning_whose_scaled_cost_does_not_fit_is_left_out_without_a_probe(questions):
    """Where one fine-tuning head is measured on this device, another's cost is its measured
    state times their compute ratio (here the same MiniLM: 1.0); where not even its cheapest
    recipe fits on that, it is left out unmeasured, with the budget that would include it."""
    full = ("passthrough", "finetune")
    search, schedule = _begin(questions, 300, [FINETUNE, full])
    _prologue(search, schedule, 40, 38)
    _cost(search, FINETUNE, overhead=1.0, rate=400.0)  # 400 s a unit: slow
    assert search.ask(schedule, "cores") is None  # neither fits; nothing is probed
    c = _default(schedule, full)
    assert c.status == "left out" and "here (scaled from finetune-short's measured step by its " \
        "1.0x compute; never measured on itself)" in c.note and "a budget of about" in c.note
    assert not search.costs[full].measured


def test_a_preparation_that_fails_leaves_its_pairs_out_and_the_search_goes_on(
        questions, monkeypatch):
    from embedkit.heads import TransformerClassifier

    monkeypatch.setattr(TransformerClassifier, "ready",
                        lambda self: str(self.model) != "all-mpnet-base-v2")
    search, schedule = _begin(questions, 600, [("tfidf", "logreg"), MPNET])
    search.costs[MPNET].set_head(HEADS["finetune-mpnet"].factory().set_params(max_length=32))
    _prologue(search, schedule, 40, 38)
    _cost(search, MPNET, overhead=1.0, rate=0.1)  # measured: no probe
    _cost(search, ("tfidf", "logreg"), overhead=100.0, rate=0.0)  # dearer per point
    job = search.ask(schedule, "cores")
    assert (job.kind, job.about) == ("prepare", "finetune-mpnet")
    search.tell(schedule, job, OSError("could not reach the package index"))
    mpnet = _default(schedule, MPNET)
    assert mpnet.status == "left out" and mpnet.note == (
        "preparing finetune-mpnet failed (could not reach the package index)")
    assert "fine-tuning" in search.board.tiers_reached
    assert search.ask(schedule, "cores").pair == ("tfidf", "logreg")  # the search goes on


def test_a_cheaper_default_leaves_room_for_one_expected_to_bring_more(questions, monkeypatch):
    """The order by gain per second must not spend the time on a model that a better one then
    no longer fits after: MiniLM fine-tuned (the most per second) is cut to its cheapest recipe
    so that a fine-tuning expected to bring 6 points still fits after it; where even that leaves
    no room, the better one runs first and MiniLM waits; one left out in the same call keeps no
    room."""

    better = ("passthrough", "finetune")  # fully fine-tuned: declared here to bring 6 points
    monkeypatch.setitem(HEADS, "finetune", dataclasses.replace(HEADS["finetune"], gain=6.0))

    def begin(short, full):
        search, schedule = _begin(questions, 300, [FINETUNE, better])
        _prologue(search, schedule, 30, 29)
        _measured(search, schedule, FINETUNE, short)
        _measured(search, schedule, better, full)
        return search, schedule

    # MiniLM: its own recipe 30 s, one epoch 15 s (fits the share), its cheapest 10.5 s; the
    # better one: one epoch, its cheapest, 287 s of the 300
    search, schedule = begin(30.0, 2 * 287.0)
    first = search.ask(schedule, "cores")
    dear = _default(schedule, better)
    assert first.pair == FINETUNE and (first.recipe["head__epochs"], first.recipe["head__k"]) == (1, 3)
    assert first.estimate == pytest.approx(10.5)
    assert dear.least == pytest.approx(287.0) and dear.estimate <= 300 - first.estimate
    assert dear.status == "waiting"

    # the better one's cheapest needs 295 s: MiniLM's cheapest leaves no room, the better runs
    # first and MiniLM waits (not left out)
    search, schedule = begin(30.0, 2 * 295.0)
    first = search.ask(schedule, "cores")
    assert first.pair == better and first.recipe["head__epochs"] == 1
    assert _default(schedule, FINETUNE).status == "waiting"

    # one left out in the same call (too dear for every recipe) keeps no room
    search, schedule = begin(30.0, 2 * 400.0)
    first = search.ask(schedule, "cores")
    assert first.pair == FINETUNE and first.recipe["head__epochs"] == 1 and first.recipe["head__k"] == 6
    assert _default(schedule, better).status == "left out"


def test_the_growth_of_a_cheaper_model_leaves_the_room_kept_for_a_better_default(
        questions, monkeypatch):
    """MiniLM fine-tuned was cut to its cheapest recipe so that the better fine-tuning (expected
    to bring more) still fits after it; its growth must not take that room either: with 289.5 s
    left, the better one (287 s, 15.7 points expected) comes before MiniLM's second fit (30 s,
    7.7 points expected), after which it no longer fits."""

    better = ("passthrough", "finetune")
    monkeypatch.setitem(HEADS, "finetune", dataclasses.replace(HEADS["finetune"], gain=6.0))
    search, schedule = _begin(questions, 300, [FINETUNE, better])
    _prologue(search, schedule, 30, 29)
    _measured(search, schedule, FINETUNE, 30.0)
    _measured(search, schedule, better, 2 * 287.0)
    first = search.ask(schedule, "cores")
    assert first.pair == FINETUNE and first.estimate == pytest.approx(10.5)
    _scored(search, first, 40, fit=first.estimate, measure=False)
    search.time.clock = Paused(300 - first.estimate)
    dear = _default(schedule, better)
    (grown,) = schedule.growth("cores")
    assert grown.estimate == pytest.approx(30.0) and dear.estimate + grown.estimate > search.time.left()
    assert schedule.gain(dear) > schedule.gain(grown)
    assert search.ask(schedule, "cores") is dear  # today: MiniLM's growth, and the better one is left out


def _third_fit_and_a_default(trec, default_seconds: float):
    """TF-IDF + LR scored twice (on a subsample, then grown) with 1,000 s left and GloVe + LR
    waiting, whose fit takes ``default_seconds``: the search, its schedule, the default, the
    third fit."""
    static = ("glove", "logreg")
    search, schedule = _begin(trec, 1000, [("tfidf", "logreg"), static])
    _prologue(search, schedule, 700, 650)
    _, cost = _sparse(search, schedule, 400.0)
    _cost(search, static, overhead=default_seconds / MARGIN, rate=0.0, predict_rate=0.0)
    first = search.ask(schedule, "cores")
    assert first.pair == ("tfidf", "logreg") and first.estimate == pytest.approx(100.0, rel=0.02)
    _scored(search, first, 800, measure=False)
    second = search.ask(schedule, "cores")  # one growth: it leaves the waiting default its time
    assert second.grown_from is first and second.estimate == pytest.approx(cost(len(second.rows)))
    _scored(search, second, 850, measure=False)
    waiting = _default(schedule, static)
    (third,) = schedule.growth("cores")
    assert third.grown_from is second and waiting.status == "waiting"
    return search, schedule, waiting, third


def test_every_default_that_fits_is_fitted_before_a_model_grows_past_its_second_fit(trec, monkeypatch):
    """Exploration is a rule, not an accident of the order: a scored model may grow once while
    defaults wait (its growth leaves their cheapest fits the time), but its third fit waits until
    every default that fits, and could grow after its first fit, has had its own, even one whose
    expected gain per second is lower."""
    monkeypatch.setitem(REPRESENTATIONS, "glove", dataclasses.replace(REPRESENTATIONS["glove"], gain=0.2))
    search, schedule, waiting, third = _third_fit_and_a_default(trec, 200.0)
    assert schedule.measurable(waiting)  # its 200 s and a step of growth after them fit the 1,000
    # by expected gain per second alone the third fit would come first
    assert schedule.gain(third) / third.estimate > schedule.gain(waiting) / waiting.estimate > 0
    assert search.ask(schedule, "cores") is waiting
    _scored(search, waiting, 600, measure=False)
    assert search.ask(schedule, "cores").key == third.key  # every default fitted: the growth goes on


def test_a_default_that_could_not_grow_after_its_first_fit_holds_no_growth_back(trec):
    """A default whose cheapest fit fits the time left but no step of growth after it (500 s,
    and 1,500 more for its next step, of the 1,000 left) is no measurement the search could bet
    on: it is a last bet like any other option, so a third fit expected to bring more, and more
    a second, comes first (on wordnet-glosses the first rung held fine-tuned MiniLM's third step
    back for fine-tuned mpnet's only fit, which then took the time that step needed)."""
    search, schedule, waiting, third = _third_fit_and_a_default(trec, 500.0)
    assert not schedule.measurable(waiting)
    assert schedule.gain(third) > schedule.gain(waiting) > 0
    assert schedule.gain(third) / third.estimate > schedule.gain(waiting) / waiting.estimate
    asked = search.ask(schedule, "cores")
    assert asked.grown_from is third.grown_from and asked.key == third.key


def test_a_fine_tuning_variant_too_dear_for_its_first_recipe_is_cut_to_the_time_left(questions):
    """When the fine-tuned leader's other settings no longer fit on its own recipe (two epochs),
    the time left still buys them on the richest recipe that fits (one epoch, the same rows), at
    that share of the gain; each variant runs once, however it was cut; one that would need fewer
    rows than its first is not cut to them."""
    search, schedule = _begin(questions, 300, [FINETUNE])
    _prologue(search, schedule, 30, 29)
    _measured(search, schedule, FINETUNE, 25.0)
    first = search.ask(schedule, "cores")
    assert first.recipe["head__epochs"] == 2 and first.rows is None
    _scored(search, first, 54, fit=20.0, measure=False)
    assert schedule.growth("cores") == []  # its own recipe on every row: grown already
    # the time left now pays for one epoch of it, not two
    _measured(search, schedule, FINETUNE, 1.1 * search.time.left())
    chosen = []
    while (c := search.ask(schedule, "cores")) is not None:
        assert c.variant_of is first and c.rows is None and c.estimate <= search.time.left()
        assert c.recipe["head__epochs"] == 1 and "head__epochs" not in c.params
        chosen.append(c)
    # the other learning rate on one epoch: half the work of its own two-epoch recipe; then three
    # epochs cut to one (the default learning rate): a third; {lr, 3 epochs} cut to one is the
    # first again
    assert [c.params for c in chosen] == [{"head__lr": 5e-5}, {}]
    assert [c.share for c in chosen] == [pytest.approx(0.5 ** WORK_EXPONENT),
                                         pytest.approx((1 / 3) ** WORK_EXPONENT)]
    assert schedule.reach(FINETUNE) == 1.0  # it leads
    assert schedule.gain(chosen[0]) == pytest.approx(4.0 * 0.5 ** WORK_EXPONENT * VARIANT_SHARE)
    assert len({c.key for c in [first, *chosen]}) == 3

    search, schedule = _begin(questions, 300, [FINETUNE])
    _prologue(search, schedule, 30, 29)
    _measured(search, schedule, FINETUNE, 25.0)
    first = _scored(search, search.ask(schedule, "cores"), 54, fit=20.0, measure=False)
    # so dear that only fewer rows than its first's would fit: no variant
    _measured(search, schedule, FINETUNE, 10 * search.time.left())
    assert search.ask(schedule, "cores") is None


def test_on_a_device_fifty_times_faster_fine_tuning_runs_first_and_pays_for_its_seeds(questions):
    """The order follows expected gain per measured second: on two CPU cores the cheap sparse
    pairs run before fine-tuning; on a device lane where a training step is measured fifty times
    cheaper, fine-tuning is the device's first model, on its full recipe and every row, while
    the cores fit the sparse pairs, and the finish can refit it with every seed it may average."""
    pairs = [("tfidf", "logreg-cv"), ("nbsvm", "logreg-cv"), ("tfidf", "mlp"), FINETUNE]
    search, schedule = _begin(questions, 300, pairs)
    _prologue(search, schedule, 40, 38)
    _cost(search, FINETUNE, overhead=5.0, rate=2.0)
    order = []
    while (c := search.ask(schedule, "cores")) is not None and c.pair != FINETUNE:
        order.append(c.pair)
        _scored(search, c, 41)
    assert order == [("tfidf", "logreg-cv"), ("nbsvm", "logreg-cv"), ("tfidf", "mlp")]
    on_cpu = c
    assert on_cpu.recipe["head__epochs"] == 2 and on_cpu.rows is None
    assert on_cpu.estimate == pytest.approx(MARGIN * (5.0 + 2.0 * 8 + 2.0 * 0.4))  # 8 units

    gpu, schedule = _begin(questions, 300, pairs, device_lane=True, finish=Finish(budget=300.0))
    _cost(gpu, FINETUNE, overhead=5.0 / 50, rate=2.0 / 50)
    assert list(gpu.lanes) == ["device", "cores"]
    assert search.ask(schedule, "device") is None  # the prologue first, on the cores
    _prologue(gpu, schedule, 40, 38)
    first = search.ask(schedule, "device")
    assert first.pair == FINETUNE and first.lane == "device" and first.tier == "fine-tuning"
    assert first.recipe["head__epochs"] == 2 and first.rows is None  # the full recipe, all rows
    assert first.estimate == pytest.approx(on_cpu.estimate / 50)
    assert search.ask(schedule, "cores").pair[0] in ("tfidf", "nbsvm")  # the cores, beside it
    # scored as it would be (the pick), the finish can refit it with every seed it may average
    _scored(gpu, first, 55, fit=0.2)
    gpu.board.fill(True)  # every default done
    assert gpu.board.best() is first
    assert gpu.finish.refit_seconds(gpu, first, MAX_SEEDS) < 0.2 * gpu.time.left()
    assert gpu.finish.reserved_seeds == RESERVED_SEEDS
    assert gpu.time.reserve() == pytest.approx(DECIDING + gpu.finish.refit_seconds(gpu, first,
                                                                             RESERVED_SEEDS))


def _no_encoder(s, representation, estimate):
    """A prologue encoder's load that fails at once: a search of sparse pairs alone, fast."""
    def run():
        raise OSError("no encoder in this test")

    return Job(f"{representation}: loading", run, estimate=estimate, kind="load",
               about=representation)


def test_the_device_lane_trains_beside_the_cores_and_an_interrupt_stops_it(questions, monkeypatch):
    """Through `Search.run`, with a device lane (here on the CPU: every code path of it runs
    without a GPU): fine-tuning trains in the lane's thread (a stand-in that trains until it is
    stopped) while the cores fit the sparse pairs; Ctrl-C marks it interrupted and stops its
    thread, and what was scored stays."""
    from embedkit.tuning import _engine, _jobs

    real = _engine.fit_and_score

    def fit_and_score(build, rows, *data):
        if hasattr(build().steps[-1][1], "sized_for"):  # fine-tuning: trains until stopped
            for _ in range(3000):
                time.sleep(0.01)
            raise AssertionError("the device lane was not stopped")
        return real(build, rows, *data)

    monkeypatch.setattr(_engine, "fit_and_score", fit_and_score)
    monkeypatch.setattr(_jobs, "load_encoder", _no_encoder)
    lines = []
    seen = {"device": False}

    def progress(line):
        lines.append(line)
        if "started on the device" in line:
            seen["device"] = True
        elif seen["device"] and "sparse + linear:" in line:
            raise KeyboardInterrupt  # Ctrl-C while the device lane trains

    pairs = [("tfidf", "logreg"), ("bow", "logreg"), FINETUNE]
    search = _search(questions, 120, pairs, device_lane=True)
    search.say = progress
    _cost(search, FINETUNE, overhead=1.0, rate=0.5)  # measured: no probe
    search.run(Schedule(_baselines()))
    tuned = next(c for c in search.board.candidates if c.pair == FINETUNE)
    assert tuned.lane == "device" and tuned.status == "interrupted" and search.board.interrupted
    cores = [c for c in search.board.candidates if c.tier == "sparse + linear"]
    assert cores[0].status == "scored" and cores[0].started >= tuned.started  # beside it
    assert not search.board.running
    assert search.board.best().status == "scored"
    assert {c.status for c in search.board.candidates} <= {"scored", "interrupted", "left out"}
    assert all(c.note == "not tried: the search was interrupted (Ctrl-C or SIGTERM) before its turn"
               for c in search.board.candidates if c.status == "left out")  # named, not dropped


def _limit_above_now(margin: float) -> float:
    """A memory limit ``margin`` bytes above what this process holds once its garbage is
    collected (a worker that ran other tests first may hold freed objects awaiting collection,
    and its later fits would then be stopped too)."""
    import gc

    from embedkit.machine import resident

    gc.collect()
    return resident() + margin


def _greedy_where(monkeypatch, greedy) -> None:
    """A simulated fault: every fit for which ``greedy(build, rows)`` holds allocates memory
    (10 MB at a time, every page written, up to 3 GB) until the search's limit stops it; the
    others fit as they are; the prologue's encoder fails to load (a search of sparse pairs)."""
    from embedkit.tuning import _engine, _jobs

    real = _engine.fit_and_score

    def fit_and_score(build, rows, *data):
        if greedy(build, rows):
            held = []
            for _ in range(300):
                held.append(np.ones(10 * 2**20 // 8))
                time.sleep(0.005)
            raise AssertionError("the fit was not stopped at the memory limit")
        return real(build, rows, *data)

    monkeypatch.setattr(_engine, "fit_and_score", fit_and_score)
    monkeypatch.setattr(_jobs, "load_encoder", _no_encoder)


def test_a_fit_that_outgrows_the_memory_limit_is_stopped_left_out_and_the_search_goes_on(
        questions, monkeypatch):
    """Memory is kept like time (issue 60): a fit on the cores that grows the process past the
    limit (here, a simulated fault: an MLP whose fit only allocates) is stopped there, as the
    deadline stops one, and left out saying so and what limit would include it; its pair's state
    keeps what it measured, so a later model of that pair that would need as much is left out
    before it runs, saying what it needs; the other models are scored, each with what its fit
    grew the process by."""
    _greedy_where(monkeypatch, lambda build, rows: getattr(build, "args", ())[1:2] == ("mlp",))
    greedy_pair = ("tfidf", "mlp")
    search = _search(questions, 120, [("tfidf", "logreg"), greedy_pair, ("bow", "logreg")])
    search.asked = dataclasses.replace(search.asked, memory=_limit_above_now(300 * 2**20))
    search.run(Schedule(_baselines()))
    greedy = next(c for c in search.board.candidates if c.pair == greedy_pair)
    assert greedy.status == "left out" and not search.board.interrupted
    assert re.search(r"^stopped at .* of memory, over the limit of [\d.]+ [MG]B, after it grew the "
                     r"process by \d+ MB; a limit of more than .* would include it$",
                     greedy.note), greedy.note
    assert 150 * 2**20 < greedy.memory < 800 * 2**20
    assert search.costs[greedy_pair].memory == greedy.memory
    others = [c for c in search.board.candidates if c.pair != greedy_pair and c.kind == "candidate"]
    assert len(others) >= 2 and all(c.status == "scored" and c.memory >= 0 for c in others)
    later = greedy.but(params={"head__epochs": 20}, estimate=1.0)
    assert search.fits(later) is False
    search.leave_out(LeaveOut(later))
    assert re.search(r"^its fit needs about \d+ MB of memory beyond the .* this process holds, "
                     r"over the limit of .*; a limit of about .* would include it$", later.note), later.note


def test_a_fit_stopped_at_the_memory_limit_on_many_rows_is_sized_again_on_a_third_of_them(
        trec, monkeypatch):
    """A model shrunk in rows to fit the memory (issue 60): the plain TF-IDF baseline and a
    default whose fits' memory grows with their rows (a simulated fault: past 2,000 rows a fit
    allocates until it is stopped) are stopped at the limit on every training row, sized again
    on a third of them (each at least `MIN_ROWS`) and scored there, the baseline before any
    default: the yardstick is kept (a TF-IDF baseline on 650,000 of 2,288,186 rows under a
    4 GB limit was left out). The pair's state keeps what the stopped fit measured, so its growth
    back to every row does not run."""
    _greedy_where(monkeypatch, lambda build, rows: rows is None or len(rows) > 2000)
    lines = []
    pair = ("tfidf", "logreg")

    class NoFill(Schedule):  # the defaults and their growth: the variants are not the point
        def variants(self, lane):
            return []

    search = _search(trec, 300, [pair], lines)  # time enough for every row
    search.asked = dataclasses.replace(search.asked, memory=_limit_above_now(300 * 2**20))
    search.run(NoFill(_baselines()))
    n = len(search.data.train)
    baseline = next(c for c in search.board.candidates if c.name == TFIDF_BASELINE)
    first = next(c for c in search.board.candidates if c.pair == pair and c.variant_of is None
                 and c.grown_from is None)
    for c in (baseline, first):
        assert c.status == "scored" and len(c.rows) == n // GROWTH >= MIN_ROWS, (c.label, c.note)
        said = [line for line in lines if "sized again" in line and line.split("] ")[1].startswith(
            c.label.split(" (")[0])]
        assert len(said) == 1 and re.search(
            r": stopped at [\d.]+ [MG]B of memory, over the limit of [\d.]+ [MG]B, after it grew the "
            rf"process by \d+ MB: sized again on {n // GROWTH:,} rows$", said[0]), said
    assert lines.index(next(x for x in lines if "sized again" in x and TFIDF_BASELINE in x)) < \
        lines.index(next(x for x in lines if "sized again" in x and TFIDF_BASELINE not in x))
    assert search.costs[pair].memory > 50 * 2**20  # its dearest a row: what it measured
    assert not [c for c in search.board.candidates if c.pair == pair and c.rows is None
                and c.status == "scored"]  # never grown back to every row


def test_the_defaults_a_search_ended_before_are_left_out_saying_so(questions):
    """Every pair of the search is on the leaderboard: a default still waiting when the search
    ends (its time ran out, or Ctrl-C) is left out, saying that it was not tried and why (a
    sparse MLP that ran 739 s past its estimate to the deadline left five pairs unsaid)."""
    pairs = [("tfidf", "logreg"), ("bow", "logreg")]
    for interrupted, why in ((False, "the search's time ran out"),
                             (True, r"the search was interrupted \(Ctrl-C or SIGTERM\)")):
        search, schedule = _begin(questions, 300, pairs)
        search.board.interrupted = interrupted
        search.end(schedule)
        waiting = [c for c in search.board.candidates if c.pair in pairs]
        assert len(waiting) == 2 and all(c.status == "left out" and re.fullmatch(
            f"not tried: {why} before its turn", c.note) for c in waiting), [c.note for c in waiting]


# -- frozen encoders other than the prologue's -------------------------------------------------
def test_a_second_frozen_encoders_pass_is_asked_once_before_its_models_fit(questions):
    """A frozen pair whose encoder is not the prologue's is estimated with its pass over its rows
    (the load, then the prologue's measured rate times the registry's cost ratio); chosen, the
    pass is a job first; once it is paid every pair that reads those vectors costs its head
    alone."""
    pairs = [("minilm-tokens", "linear"), ("minilm-tokens", "attention")]
    search, schedule = _begin(questions, 600, pairs)
    _prologue(search, schedule, 40, 38, per_doc=0.02)
    ratio = REPRESENTATIONS["minilm-tokens"].cost / REPRESENTATIONS["minilm"].cost
    linear, attention = (_default(schedule, p) for p in pairs)
    pass_seconds = ENCODER_LOAD + MARGIN * ratio * 0.02 * 300
    assert schedule.plans.pass_seconds(linear) == pytest.approx(pass_seconds)
    job = search.ask(schedule, "cores")
    assert isinstance(job, Job) and (job.kind, job.about) == ("encode", "minilm-tokens")
    assert job.label == "minilm-tokens: encoding 300 documents"
    assert job.estimate == pytest.approx(pass_seconds)
    assert linear.estimate == pytest.approx(pass_seconds + HEADS["linear"].cost * 240 / 1000)
    index = schedule.plans.unencoded(linear)
    _told(search, schedule, job, (300, 0.01 * 300, index))
    assert [schedule.plans.pass_seconds(c) for c in (linear, attention)] == [0.0, 0.0]
    chosen = search.ask(schedule, "cores")
    assert chosen is linear and chosen.estimate == pytest.approx(HEADS["linear"].cost * 240 / 1000)
    # the vectors of other rows are not cached: a model on them pays for them, at the pass's rate
    assert schedule.plans.doc_seconds("minilm-tokens") == pytest.approx(MARGIN * 0.01)


def test_a_frozen_encoder_not_fetched_costs_its_fetch_and_its_pass_without_a_probe(
        questions, monkeypatch):
    """all-mpnet-base-v2's frozen features, before it is fetched, are estimated as its fetch, its
    pass over the rows (loaded, at the prologue's measured rate times the registry's cost ratio,
    7) and the head; nothing is fitted to know it."""
    from embedkit.representations import TransformerEmbedder
    from embedkit.storage import resources

    monkeypatch.setattr(TransformerEmbedder, "ready",
                        lambda self: str(self.model) != "all-mpnet-base-v2")
    monkeypatch.setattr(resources, "fetch", lambda *a, **k: pytest.fail("fetched to estimate"))
    pair = ("mpnet", "logreg-cv")
    search, schedule = _begin(questions, 600, [pair])
    _prologue(search, schedule, 40, 38, per_doc=0.01)
    ratio = REPRESENTATIONS["mpnet"].cost / REPRESENTATIONS["minilm"].cost
    assert ratio == 7.0
    c = _default(schedule, pair)
    job = search.ask(schedule, "cores")
    setup, pass_seconds = REPRESENTATIONS["mpnet"].setup, ENCODER_LOAD + MARGIN * 7.0 * 0.01 * 300
    assert c.estimate == pytest.approx(setup + pass_seconds + HEADS["logreg-cv"].cost * 240 / 1000)
    assert (job.kind, job.about) == ("prepare", "mpnet") and not search.costs[pair].measured
    search.tell(schedule, job, None)
    job = search.ask(schedule, "cores")  # fetched: its pass next
    assert (job.kind, job.about) == ("encode", "mpnet")
    assert job.estimate == pytest.approx(pass_seconds)


def test_a_frozen_pass_its_own_rate_shows_cannot_finish_leaves_its_pairs_out(questions):
    """The pass stops once its own rate shows the rest would not fit; its pairs are then
    estimated at that rate (no load: the model is read) and left out, with the time they need."""
    pairs = [("minilm-tokens", "linear"), ("minilm-tokens", "attention")]
    lines = []
    search, schedule = _begin(questions, 600, pairs, lines)
    _prologue(search, schedule, 40, 38, per_doc=0.02)
    job = search.ask(schedule, "cores")
    index = schedule.plans.unencoded(_default(schedule, pairs[0]))
    _told(search, schedule, job, (32, 2.0 * 32, index))  # 2 s a document: stopped after 32 of 300
    assert any("minilm-tokens: 32 of 300 documents encoded once in 64 s" in line for line in lines)
    linear, attention = (_default(schedule, p) for p in pairs)
    assert schedule.plans.pass_seconds(attention) == pytest.approx(MARGIN * 2.0 * 268)
    assert search.ask(schedule, "cores") is None
    assert [c.status for c in (linear, attention)] == ["left out", "left out"]
    assert linear.note.startswith("needs about 11.2 min, 10.0 min were left")


def test_a_frozen_pass_that_fails_is_left_to_its_models_fits_to_report(questions):
    """A second encoder whose pass fails is not asked again before each of its models: the
    progress line says so, and the model's own fit reports the error."""
    lines = []
    search, schedule = _begin(questions, 600, [("minilm-tokens", "linear")], lines)
    _prologue(search, schedule, 40, 38)
    job = search.ask(schedule, "cores")
    assert (job.kind, job.about) == ("encode", "minilm-tokens")
    search.tell(schedule, job, OSError("weights unreadable"))
    assert any("frozen encoder: minilm-tokens: failed (weights unreadable)" in line for line in lines)
    assert not any("minilm-tokens: 300 documents encoded once" in line for line in lines)
    chosen = search.ask(schedule, "cores")
    assert chosen is _default(schedule, ("minilm-tokens", "linear"))
    assert schedule.plans.pass_seconds(chosen) == 0.0


def test_the_prologues_pass_stopped_by_an_error_leaves_the_minilm_baseline_out_and_goes_on(questions):
    """The prologue encoder's own pass can end in an error (the memory limit met while it
    encodes): the search goes on without the MiniLM baseline, which is left out saying so; before,
    the next ask met the baseline's place in the prologue unfilled and raised inside the search."""
    from embedkit._stopping import MemoryLimitReached

    lines = []
    search, schedule = _begin(questions, 600, [("tfidf", "logreg"), ("minilm", "logreg")], lines)
    base = search.ask(schedule, "cores")
    search.tell(schedule, base, _scored(search, base, 40))
    load = search.ask(schedule, "cores")
    _told(search, schedule, load, (0.004, None, 0.004))
    encode = search.ask(schedule, "cores")
    assert isinstance(encode, Job) and encode.kind == "encode"
    stopped = MemoryLimitReached("stopped at 3.1 GB of memory, over the limit of 3.0 GB")
    _told(search, schedule, encode, stopped)
    chosen = search.ask(schedule, "cores")
    assert isinstance(chosen, Candidate) and chosen.kind == "candidate"
    minilm = next(c for c in search.board.candidates if c.name == MINILM_BASELINE)
    assert minilm.status == "left out" and minilm.note == (
        "the encoder's pass stopped: stopped at 3.1 GB of memory, over the limit of 3.0 GB")
    assert any("frozen encoder: minilm: failed (stopped at 3.1 GB" in line for line in lines)


class Ticking(Clock):
    """A clock that moves half a second each time it is read: a decision takes time."""

    def __init__(self, seconds: float):
        super().__init__(seconds)
        self.now = 0.0

    def elapsed(self) -> float:
        self.now += 0.5
        return self.now


def test_a_recipe_sized_to_the_time_left_still_fits_once_the_clock_has_moved(trec):
    """A recipe cut to whole batches fills the time it is sized to within one batch's cost, and
    the clock moves between sizing it and checking that it fits: the sizing leaves the decision
    its time (`DECIDING`). Here a batch of the cheapest recipe costs 3 s, and the clock moves
    0.5 s each time it is read."""
    df = _slice(trec, 3000)
    search, schedule = _begin(df, 200, [FINETUNE])
    _prologue(search, schedule, 400, 380)
    c = _default(schedule, FINETUNE)
    n, head = len(search.data.train), schedule.plans.head(c)
    assert n == 2400
    search.time.clock = Ticking(200)
    # the cheapest recipe on every row needs 1.1 times the time left: on 1,000 rows it needs
    # 0.47 of it, and a step of growth after it would not fit: the most rows the time left pays
    # for, at once
    cheapest = head.least_work(n) * math.ceil(n / 32) / math.ceil(1000 / 32)
    _cost(search, FINETUNE, rate=1.1 * search.time.left() / MARGIN / cheapest, predict_rate=0.0)
    chosen = search.ask(schedule, "cores")
    assert chosen is c and chosen.status == "waiting"
    assert chosen.recipe["head__epochs"] == 1 and chosen.recipe["head__k"] == 3
    assert 2000 <= len(chosen.rows) < n and chosen.estimate <= search.time.left()


def test_a_dear_head_waits_for_a_cheaper_one_of_its_tier_to_be_measured(questions, monkeypatch):
    """Neither fine-tuning head measured yet: the base-size encoder, declared to bring more, is
    not probed first (on 1,780 news articles its probe took 357 s of a 10-minute budget); MiniLM
    is, and the base-size one is then sized on MiniLM's measured step times their compute."""

    from embedkit.heads import TransformerClassifier
    from embedkit.storage import resources

    monkeypatch.setattr(TransformerClassifier, "ready", lambda self: True)  # both on the machine
    monkeypatch.setattr(resources, "fetch", lambda *a, **k: pytest.fail("fetched to estimate"))
    # its prior cost as MiniLM's: more gain for the same seconds, it would be chosen first
    monkeypatch.setitem(HEADS, "finetune-mpnet", dataclasses.replace(
        HEADS["finetune-mpnet"], cost=HEADS["finetune-short"].cost))
    search, schedule = _begin(questions, 600, [FINETUNE, MPNET])
    search.costs[MPNET].set_head(HEADS["finetune-mpnet"].factory().set_params(max_length=32))
    _prologue(search, schedule, 40, 38)
    dear = _default(schedule, MPNET)
    assert schedule.gain(dear) > schedule.gain(_default(schedule, FINETUNE))
    probe = search.ask(schedule, "cores")
    assert isinstance(probe, Job) and probe.kind == "probe" and probe.about == FINETUNE
    _measured(search, schedule, FINETUNE, 30.0)
    assert schedule.plans.estimate(dear) and "scaled from finetune-short's measured step" in (
        schedule.plans.scaled(dear, schedule.plans.head(dear))[1])


def test_a_cheap_default_runs_where_the_better_ones_fit_as_well_after_it(questions, monkeypatch):
    """Two better defaults whose cheapest fits cannot both fit the time left anyway: a cheap one
    that leaves the same of them fitting is not held back by the sum of their times."""

    better = ("passthrough", "finetune")
    monkeypatch.setitem(HEADS, "finetune", dataclasses.replace(HEADS["finetune"], gain=6.0))
    search, schedule = _begin(questions, 300, [("tfidf", "logreg"), FINETUNE, better])
    _prologue(search, schedule, 30, 29)
    _measured(search, schedule, FINETUNE, 2 * 200.0)  # cheapest: about 200 s of the 300
    _measured(search, schedule, better, 2 * 200.0)
    _cost(search, ("tfidf", "logreg"), rate=1e-6, predict_rate=0.0)
    first = search.ask(schedule, "cores")  # the two dear ones: one of them fits, with or without it
    assert first.pair == ("tfidf", "logreg") and first.estimate < 1.0


def test_on_long_documents_the_cheap_models_and_minilms_probe_come_before_the_base_encoders(
        bbc, monkeypatch):
    """1,780 news articles, the encoder's pass measured at 22 ms a document: the base-size
    encoder's fine-tuning, declared to bring the most, was probed first (the cheap room kept
    for it on the pass's bound made everything cheaper wait), and its probe took 357 s of the
    10 minutes. Now the cheap models run first, then MiniLM's probe; the base-size one waits to
    be sized on MiniLM's measured step."""
    from embedkit.heads import TransformerClassifier
    from embedkit.tuning._settings import DEFAULT_PAIRS

    monkeypatch.setattr(TransformerClassifier, "ready", lambda self: True)
    docs = bbc.sample(1780, random_state=0).reset_index(drop=True)
    search, schedule = _begin(docs, 600, list(DEFAULT_PAIRS))
    search.costs[MPNET].set_head(HEADS["finetune-mpnet"].factory().set_params(max_length=256))
    _prologue(search, schedule, 349, 341, per_doc=0.022)
    asked = []
    while not isinstance(action := search.ask(schedule, "cores"), Job):
        asked.append(action.pair)
        _scored(search, action, 340)
    assert asked and all(pair not in (FINETUNE, MPNET) for pair in asked)
    assert (action.kind, action.about) == ("probe", FINETUNE)
