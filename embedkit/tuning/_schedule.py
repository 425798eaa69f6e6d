"""What the budgeted search tries, and in which order: the schedule behind `embedkit.Tuner`.

The engine (`embedkit.tuning._engine.Search.run`) asks it what each lane runs next (`ask`) and
tells it what came of it (`tell`); it decides over measured evidence only, and what it decides
the engine records: a model it leaves out is a decision it returns (`LeaveOut`), never a record
it writes.

* **Tiers are data** (`TIERS`): each holds the registry pairs of some kinds
  (`embedkit.registry.pair_kind`), the gain its first model is expected to bring over the
  five-line baselines (accuracy points) and its lane (the device lane on an accelerator).
* **The prologue**: the plain TF-IDF baseline; on a table, its first sparse default on the table
  and on the first text column alone (`embedkit.tuning._twin`: whether fine-tuning reads the
  table); the frozen encoder's pass (on what is cheap, see below; cached for every model that
  reads it), the plain MiniLM baseline (`embedkit.tuning._prologue`).
* **One rule: the most expected gain per second.** A model starts on what is cheap (at most
  `START_SHARE` of the time left: a subsample of rows, one epoch, the length the documents need;
  `embedkit.tuning._plans`); once scored, it may grow (`GROWTH` times its rows, then its own
  epochs), worth what its measured curve promises over the best model (its error shrinking as a
  power of a fit's work, the exponent measured by its last two fits, `CURVE_EXPONENT` before).
  A pair not started yet is worth its prior gain, or, once another pair of its tier was scored,
  that one's measured gain, read at every training row as the baselines are fitted. Every
  option competes on expected gain per estimated second; a default that would leave too little
  time for one expected to bring more waits (`Schedule._roomy`).
* **Every pair is measured before the search bets on one** (successive halving's first rung): a
  model grows once while defaults wait, leaving their cheapest fits the time, and past its
  second fit only once every default that fits has had its first, where a step of growth after
  that first still fits (`Schedule.measurable`: a later one is a last bet, valued as any).
* **The fill.** Once a lane's defaults are done it also takes variants (the registry ``space``):
  a pair within one standard error of the leader gets the full value, one three or more below
  only the time nothing within reach can use.
"""

from __future__ import annotations

import numpy as np

from .._stopping import MemoryLimitReached
from ..registry import HEADS, REPRESENTATIONS, TRAINS_ENCODER, pair_kind, sampled_settings
from . import _jobs
from ._candidate import Again, Candidate, FoldsTooDear, Job, LeaveOut, Plan, settle
from ._plans import Plans
from ._prologue import Prologue
from ._settings import ENCODER, GROWTH, MARGIN, MIN_ROWS
from ._twin import Twin
from ._value import TIERS, TRAINING_TIERS, Tier, Worth, tier_of

__all__ = ["TIERS", "Schedule", "Tier", "holds_settings", "tier_of"]


class Schedule(Prologue, Worth):
    """The order of a search's candidates: `begin`, then `ask` per lane and `tell` per outcome.
    ``baselines`` maps the two baselines' names to what builds their pipelines."""

    def __init__(self, baselines: dict):
        self.baselines = dict(baselines)
        self.defaults: list[Candidate] = []
        self.tried: set[tuple] = set()
        self.queue: list = []  # the prologue's actions (and its leave-outs) still to hand out, in order
        self.search = self.plans = self.twin = self.first = None

    def candidate(self, rep: str, head: str) -> Candidate:
        """A registry pair's default: its tier, lane and the registry's prior cost."""
        s, tier = self.search, tier_of(rep, head)
        encoding = 0.0 if rep == ENCODER else REPRESENTATIONS[rep].cost  # the prologue pays it
        lane = ("device" if tier.lane == "device" and s.asked.device_lane
                else "cluster" if s.asked.client is not None and tier.remote else "cores")
        return Candidate(representation=rep, head=head, tier=tier.name, cache=s.asked.cache,
                         task=s.data.task, encoder=rep if tier.name == "frozen encoder" else "",
                         plan=Plan(lane=lane, roles=s.data.roles, prior=(
                             encoding * len(s.data.train) + HEADS[head].cost
                             * s.data.fit_rows(len(s.data.train))) / 1000))

    # -- the prologue ---------------------------------------------------------------------------
    def begin(self, search) -> None:
        """Every pair's default waits; the prologue's baselines and encoder come first."""
        from ._settings import BASELINE_COST

        s = self.search = search
        self.plans = Plans(s)
        self.defaults = [self.candidate(r, h) for r, h in s.asked.pairs
                         if not (s.asked.finetune is False and pair_kind(r, h) in TRAINS_ENCODER)]
        tiers = {t.name: sum(c.tier == t.name for c in self.defaults) for t in TIERS}
        d = s.data
        rows = (f"{len(d.train):,} training rows, {len(d.valid):,} validation rows" if d.folds is None
                else f"{len(d.train):,} rows, too few to hold some out: each model is scored on "
                     f"every row by {d.fits_each}-fold cross-validation, then refit on all of them")
        s.say(f"{s.time.stamp()} {rows}; tiers: "
              + ", ".join(f"{t} ({n} pairs)" for t, n in tiers.items() if n))
        self.twin = Twin(s, self.defaults)  # on a table: does fine-tuning read all of it?
        first = self.twin.prologue()
        self.defaults += first[1:]
        (tfidf, build), (self.minilm, _) = list(self.baselines.items())[:2]
        chars = float(np.mean([len(t) for t in d.texts[d.valid]])) if len(d.valid) else 0.0
        s.board.reached("baselines")
        prior = d.fit_rows(len(d.train)) / 1000 * (BASELINE_COST[0] + BASELINE_COST[1] * chars / 500)
        baseline = Candidate(name=tfidf, representation="plain TF-IDF", head="LR", kind="baseline",
                             tier="baselines", factory=build, plan=Plan(prior=prior))
        self.plans.estimate(baseline)
        self.queue = [baseline, *first, "encoder"]

    # -- the order ------------------------------------------------------------------------------
    def ask(self, lane: str):
        """What ``lane`` runs next: the prologue's actions in order, then, of every pair's default
        waiting, the growth of every scored model and (once the defaults are done) variants, the
        most expected gain per estimated second among those that fit; a job first where the
        chosen one needs one (a preparation, a probe, a frozen pass); a `LeaveOut` where the
        first it meets that does not fit is a first fit (the engine records it and asks again).
        None: nothing fits. One pass chooses; the next pass looks again without what the last
        one ruled out (a prologue item that left nothing to run, a choice that would take a
        better default's time)."""
        s, later = self.search, frozenset()
        while True:
            if self.queue:
                if lane != "cores":
                    return None
                if (item := self._prologue()) is not None:
                    return item
                continue
            chosen, waiting = self._choose(lane, later)
            if chosen is None or isinstance(chosen, LeaveOut):
                return chosen
            if s.costs[chosen.pair].probe_due:
                return self._needs(chosen)  # measured first: what it then costs decides the rest
            roomy = self._roomy(chosen, waiting)
            if isinstance(roomy, LeaveOut):
                return roomy
            if not roomy:
                later |= {chosen.key}
                continue
            if (job := self._needs(chosen)) is not None:
                return job
            self.tried |= {chosen.key, chosen.asked} if chosen.variant_of is not None else {chosen.key}
            s.board.reached(chosen.tier)
            return chosen

    def _choose(self, lane: str, later: frozenset):
        """Of what ``lane`` may run but ``later``, the most expected gain per estimated second
        that fits (or the first first fit met that does not fit, left out: `LeaveOut`), beside the
        defaults waiting (a variant chosen counts as tried under its key as asked too, before
        `cut`: tried once, however it was cut). Once the last defaults are left out, the next
        call's options are the fill's."""
        s = self.search
        self.twin.apply(self.defaults)
        waiting = [c for c in self.defaults if c.status == "waiting"]
        # every tier's defaults done: the fill has begun (the finish then keeps the time of the
        # leader's refit with its seeds back, `embedkit.tuning._finish.Finish.reserve`)
        s.board.fill(not waiting and not any(c in s.board.running for c in self.defaults))
        options = [c for c in waiting if c.lane == lane and c.key not in later]
        options += [c for c in self.growth(lane) + ([] if options else self.variants(lane))
                    if c.key not in later]
        chosen, value = None, (False, 0.0)
        for c in sorted(options, key=lambda c: c.prior):  # the cheaper measured first
            planned = c.grown_from is not None or self.plans.estimate(c)
            if isinstance(planned, LeaveOut):
                self.tried |= {c.key}
                return planned, waiting
            if not planned or (c.variant_of is not None and c.key in self.tried) or self._measured_first(c):
                continue
            if not s.fits(c):
                if c.variant_of is None and c.grown_from is None:
                    s.board.reached(c.tier)
                    return LeaveOut(c), waiting
                continue
            reach = 1.0 if c.variant_of is None else self.reach(c.pair)
            # within reach first; beyond it only for time nothing within reach can use
            gain = (reach > 0, self.gain(c) * (reach or 1.0) / max(c.estimate, 0.1))
            if gain > value:
                chosen, value = c, gain
        return chosen, waiting

    def _needs(self, c: Candidate) -> Job | None:
        """The job ``c`` needs before it runs: its steps' preparation, its head's probe, or a
        frozen encoder's pass over its rows (with a cache to keep it in)."""
        s, plans = self.search, self.plans
        steps = [] if c.factory is not None else [  # a baseline has no registry steps
            (c.representation, REPRESENTATIONS[c.representation]), (c.head, HEADS[c.head])]
        for name, entry in steps:
            if entry.setup and not plans.ready.get(name, True):
                return _jobs.prepare(name, entry.setup)
        if s.costs[c.pair].probe_due:
            return _jobs.probe(s, c, plans, c.estimate)
        if s.asked.cache is not None and plans.pass_seconds(c):
            index = plans.unencoded(c)
            return _jobs.encode(s, c.encoder, index, plans.doc_seconds(c.encoder) / MARGIN,
                                plans.pass_seconds(c))
        return None

    def _roomy(self, c: Candidate, waiting: list[Candidate]) -> bool | LeaveOut:
        """Whether ``c`` (a default, a model's growth, a variant) leaves the time for the defaults
        waiting in its lane: the ones whose cheapest fits fit the time left, most valuable first,
        must all still fit once ``c`` has run. A default or a variant keeps it for those expected
        to bring more gain (a cheaper model must not take the time a better one then no longer
        fits in); growth for those and for every one that can still be measured and grown
        (`measurable`), and a model grows past its second fit only once none is left (every pair
        is measured on itself before the search bets on one: the first rung of successive
        halving). A default that sizes itself is cut into what they leave, where it can be (a
        `LeaveOut` where no recipe of it fits at all)."""
        s, gain, growth = self.search, self.gain(c), c.grown_from is not None
        better = sorted((o for o in waiting if o is not c and o.lane == c.lane
                         and o.status == "waiting" and (self.gain(o) > gain
                                                        or growth and self.measurable(o))),
                        key=lambda o: -self.gain(o))

        def fitting(left: float) -> list[Candidate]:
            out = []
            for o in better:
                least = self.least(o)
                if least <= left:
                    out.append(o)
                    left -= least
            return out

        kept = fitting(s.time.left())
        if kept and growth and c.grown_from.grown_from is not None:
            return False
        room = sum(map(self.least, kept))
        if fitting(s.time.left() - c.estimate) == kept:
            return True
        return (c in waiting and self.plans.sizes_itself(c)
                and self.plans.plan(c, room))  # a first recipe cut into what the room leaves

    @staticmethod
    def least(c: Candidate) -> float:
        """Seconds of ``c``'s cheapest first fit (a sized head's least recipe, else its estimate)."""
        return c.estimate if c.least is None else c.least

    def measurable(self, c: Candidate) -> bool:
        """Whether default ``c`` can still be measured and then bet on: its cheapest fit and a
        step of growth after it (`GROWTH` times its work) fit the time left. The first rung holds
        growth back for such a default; one that cannot grow after its first fit is no
        measurement but a last bet: growth keeps its time only where it is expected to bring more,
        as a default keeps a better one's."""
        return (1 + GROWTH) * self.least(c) <= self.search.time.left()

    def _measured_first(self, c: Candidate) -> bool:
        """Whether ``c`` (a head that sizes itself, not measured yet) must wait for a cheaper head
        of its tier, not measured either, to be measured first: the dearer is then sized on the
        cheaper's measured step, scaled by their compute, instead of paying a probe of its own
        first (on 1,780 news articles a probe of fine-tuned all-mpnet-base-v2 took 357 s)."""
        s, plans = self.search, self.plans
        if not s.costs[c.pair].probe_due:
            return False
        compute = plans.head(c).compute()
        return any(o is not c and o.status == "waiting" and o.tier == c.tier and o.lane == c.lane
                   and s.costs[o.pair].probe_due and plans.head(o).compute() < compute
                   for o in self.defaults)

    def growth(self, lane: str) -> list[Candidate]:
        """The next fit of every scored model on ``lane`` that grew no further yet."""
        s = self.search
        parents = {c.grown_from for c in s.board.candidates if c.grown_from is not None}
        out = []
        for c in s.board.scored():
            if (c.kind == "ensemble" or c.lane != lane or c in parents or c.variant_of is not None
                    or c.line() is self.twin.twin):  # the twin answers one question
                continue
            grown = self.plans.grown(c)
            if grown is not None and grown.key not in self.tried:
                out.append(grown)
        return out

    def variants(self, lane: str) -> list[Candidate]:
        """Variants of the scored pairs (of the latest fit of each), not tried yet; none under
        cross-validation: a variant is expected to bring a share of a point, which scores on
        fewer than `CV_ROWS` rows cannot tell from their noise (several points), so tens of
        them only add chances that a lucky one is picked, and most are the sparse tier's, the
        weakest on few labels (a TF-IDF + MLP variant right on 32 of 32 sms-spam rows out of
        fold scored 54.5% on new ones: results/few_labels_tune.md)."""
        s, out = self.search, []
        if s.data.folds is not None:
            return out
        parents = {c.grown_from for c in s.board.candidates if c.grown_from is not None}
        for first in (f for f in s.board.scored() if f.kind == "candidate" and f.lane == lane
                      and f.variant_of is None and f not in parents and f.line() in self.defaults
                      and f.line() is not self.twin.twin):
            base = {**first.recipe, **first.params}
            for params in sampled_settings(first.representation, first.head, None, s.data.seed):
                option = first.but(params={**first.params, **params}, variant_of=first,
                                   grown_from=None)
                if {**base, **params} != base and option.key not in self.tried and holds_settings(option):
                    out.append(option)
        return out

    def end(self) -> list[LeaveOut]:
        """The search is over: a default it never started is left out, saying so, for the
        leaderboard names every pair of the search (a fit that ran past its estimate to the
        deadline left five of them unsaid)."""
        s = self.search
        if s is None:  # it ended before it began (Ctrl-C while the data was split)
            return []
        why = ("the search was interrupted (Ctrl-C or SIGTERM)" if s.board.interrupted
               else "the search's time ran out")
        return [LeaveOut(c, f"not tried: {why} before its turn") for c in self.defaults
                if c.status == "waiting"]

    # -- outcomes -------------------------------------------------------------------------------
    def tell(self, action, outcome) -> list[LeaveOut | Again]:
        """What came of ``action``: a job's result (or its error) updates what the plans know;
        a scored candidate needs nothing more (the engine recorded it); one whose first fold
        showed its folds would not end in time, `too_dear`; one stopped at the memory limit,
        `too_big`. Returns what it decides now, for the engine to record: the models it leaves
        out, those that wait to run again."""
        if isinstance(outcome, FoldsTooDear):
            return self.too_dear(action, outcome)
        if isinstance(outcome, MemoryLimitReached) and isinstance(action, Candidate):
            return self.too_big(action)
        if not isinstance(action, Job):
            return []
        s = self.search
        failed = isinstance(outcome, BaseException)
        if action.kind == "load":
            if failed:
                s.say(f"{s.time.stamp()} frozen encoder: {ENCODER}: failed ({outcome})"[:300])
                return []
            per_doc, self.sample, _ = outcome  # the fresh rate: the engine records it
            job = self._first_pass(per_doc)
            if isinstance(job, list):
                return job
            self.queue[:0] = [job, "minilm"]
        elif action.kind == "encode":
            return self._passed(action, outcome)
        elif action.kind == "prepare":
            return self._prepared(action, outcome)
        elif action.kind == "probe" and not failed:
            s.say(f"{s.time.stamp()} {outcome}")
        return []

    def too_dear(self, c: Candidate, err: FoldsTooDear) -> list[LeaveOut | Again]:
        """``c`` stopped after its first fold, which measured it: a default that sizes itself
        waits again, its recipe sized anew on what the fold measured (its first may have been
        sized on a probe the folds' fits outran); any other model is left out, saying what its
        folds need. A recipe sized anew that still does not fit is left out by its plan."""
        s = self.search
        settle(c, estimate=err.seconds * err.folds)
        if c in self.defaults and self.plans.sizes_itself(c):
            s.say(f"{s.time.stamp()} {c.label}: {err}: sized again on what it measured")
            return [Again(c)]
        return [LeaveOut(c, str(err), need=c.estimate)]

    def too_big(self, c: Candidate) -> list[LeaveOut | Again]:
        """``c`` was stopped at the memory limit (its note says what it reached): a first fit
        whose memory grows with its rows (not one that trains an encoder: its memory is its
        batches') waits again on a `GROWTH`th of them while that is at least `MIN_ROWS`, a
        baseline first (it is the yardstick), a default as the order chooses; anything else is
        left out, saying what it reached."""
        s, rows = self.search, self.search.data.n_rows(c)
        if (c.variant_of is None and c.grown_from is None and c.tier not in TRAINING_TIERS
                and rows // GROWTH >= MIN_ROWS and (c.kind == "baseline" or c in self.defaults)):
            s.say(f"{s.time.stamp()} {c.label}: {c.note.split('; a limit')[0]}: sized again on "
                  f"{rows // GROWTH:,} rows")
            settle(c, rows=s.data.sample_rows(rows // GROWTH))
            if c.kind == "baseline":
                self.plans.estimate(c)
                self.queue.insert(0, c)
            return [Again(c)]
        return [LeaveOut(c, c.note)]

    def _prepared(self, job: Job, outcome) -> list[LeaveOut]:
        s, name = self.search, job.about
        self.plans.ready[name] = True
        if isinstance(outcome, BaseException):  # e.g. no network for a fetch: its pairs go
            gone = [o for o in self.defaults if o.status == "waiting" and name in o.pair]
            for o in gone:
                s.board.reached(o.tier)
            return [LeaveOut(o, f"preparing {name} failed ({outcome})"[:300]) for o in gone]
        s.say(f"{s.time.stamp()} {name}: prepared once (kept on disk for every later run)")
        return []


def holds_settings(option: Candidate) -> bool:
    """Whether the model built for ``option``'s task holds its settings: a number's regressor
    drops a classifier's setting it does not take (SGD's ``modified_huber`` loss), and such a
    variant would be its first under another name; a class's head holds every one."""
    if option.task == "classification":
        return True
    built = option.build().get_params()
    return all(built.get(k, built.get(k.replace("head__", "head__estimator__", 1))) == v
               for k, v in option.params.items())

