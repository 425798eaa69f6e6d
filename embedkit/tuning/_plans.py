"""What a candidate will cost, and on what it runs: the estimates and recipes of the search's
schedule (`embedkit.tuning._schedule`), from what this machine measured.

* **Estimates** come from the pair's state (`embedkit.tuning._costs.PairState`: measured fits,
  with the margin applied there), a probe on a slice, or the registry's prior where that is
  surely small; a preparation not paid yet (a fetch) and a frozen encoder's pass not paid yet
  count in them.
* **What is cheap first**: a model whose fit on every training row would take more than
  `START_SHARE` of the time left starts on the stratified subsample that fits it (at least
  `MIN_ROWS`); a fine-tuning head starts on the richest recipe that fits it, reading the
  documents to the length they need (cut shorter only as a last resort, and said).
* **Growth** (`Plans.grown`): a scored model's next fit has `GROWTH` times its rows, then, at
  every row, its own epochs; where what is left would not pay for a step after it, it takes
  what is left.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import clone

from .._budget import DECIDING, format_seconds, largest
from ..base import is_ready
from ..data.columns import take
from ..machine import resident
from ..registry import HEADS, REPRESENTATIONS
from ..storage.fetch import ResourceNotFound
from ._candidate import Candidate, LeaveOut, settle
from ._costs import PairState, SizesItself, encoder_ratio, work_of
from ._selection import covering
from ._settings import (
    ENCODER,
    ENCODER_LOAD,
    GROWTH,
    LENGTH_SAMPLE,
    MARGIN,
    MIN_PROBE_SECONDS,
    MIN_ROWS,
    PROBE_STEPS,
    START_SHARE,
)
from ._value import TRAINING_TIERS

__all__ = ["Plans"]

class Plans:
    """Estimates and recipes over a search's measured costs (one per schedule)."""

    def __init__(self, search):
        self.search = search
        self.ready: dict[str, bool] = {}
        #: seconds a document of the prologue encoder's pass, as measured (None: not yet)
        self.per_doc: float | None = None
        #: which documents each frozen encoder's pass has cached; seconds a document of each
        self.encoded: dict[str, np.ndarray] = {}
        self.rates: dict[str, float] = {}

    # -- what a candidate still needs before it runs ---------------------------------------------
    def sizes_itself(self, c: Candidate) -> bool:
        """Whether ``c`` is a registry pair whose head sizes its own recipe to the time it is
        given (fine-tuning, SetFit: `embedkit.heads.finetune.sizing.SizedForBudget`)."""
        return c.factory is None and isinstance(self.head(c), SizesItself)

    def head(self, c: Candidate):
        """The pair's head, where it sizes itself (once) with the data's ``max_length`` and, on
        the cores, the largest batch whose fit fits the memory the limit leaves (`batched_for`;
        its need, declared, stands for the pair's until a fit measures it); a model this machine
        lacks and cannot fetch raises `ResourceNotFound`, once for every ask."""
        state = self.search.costs[c.pair]
        if state.head is None:
            s, head = self.search, HEADS[c.head].factory()
            if isinstance(head, SizesItself):  # on a sample: tokenizing a million texts takes minutes
                sample = s.data.read_texts(s.data.sample_rows(LENGTH_SAMPLE), c.roles)
                try:  # reads the encoder's tokenizer: the first use of its files
                    head.set_params(max_length=head.length_for(sample))
                except ResourceNotFound as err:
                    head = err
            if isinstance(head, SizesItself) and c.lane == "cores":  # a device's memory is its own
                if s.asked.memory is not None:
                    head.set_params(**(head.batched_for((s.asked.memory - resident()) / MARGIN) or {}))
                state.declare_memory(head.fit_memory())
            state.set_head(head)
        if isinstance(state.head, ResourceNotFound):
            raise state.head
        return state.head

    def own(self, c: Candidate) -> dict:
        """The settings of ``c``'s head that the data and the machine chose (`head`), as a
        recipe: its ``max_length``, and its batch where the memory cut it."""
        head, factory = self.head(c), HEADS[c.head].factory()
        return {f"head__{k}": getattr(head, k) for k in ("max_length", "batch_size", "gradient_accumulation")
                if k == "max_length" or getattr(head, k, None) != getattr(factory, k, None)}

    def setup(self, c: Candidate) -> float:
        """Seconds of the one-time preparations ``c``'s steps still need (0: done)."""
        total = 0.0
        for name, entry in ((c.representation, REPRESENTATIONS[c.representation]),
                            (c.head, HEADS[c.head])):
            if entry.setup and name not in self.ready:
                self.ready[name] = is_ready(entry.factory())
            total += 0.0 if not entry.setup or self.ready[name] else entry.setup
        return total

    def doc_seconds(self, representation: str) -> float:
        """Seconds a document of a frozen encoder's pass, with the margin: its own measured rate,
        else the prologue's times the registry's cost ratio, else the registry's prior."""
        rate = self.rates.get(representation) or (
            encoder_ratio(representation) * (self.per_doc or REPRESENTATIONS[ENCODER].cost / 1000))
        return MARGIN * rate

    def pass_seconds(self, c: Candidate) -> float:
        """Seconds a frozen encoder's pass still needs over ``c``'s training rows and the
        validation rows (what is cached already costs nothing; a first pass loads the model);
        0 for another kind."""
        rep = c.encoder
        if not rep:
            return 0.0
        todo = self.unencoded(c)
        if not len(todo):
            return 0.0
        load = 0.0 if rep in self.encoded else ENCODER_LOAD
        return load + self.doc_seconds(rep) * len(todo)

    def unencoded(self, c: Candidate) -> np.ndarray:
        """Positions (into the documents) of ``c``'s training rows and the validation rows whose
        vectors of ``c``'s representation are not cached yet."""
        s = self.search
        train = s.data.train if c.rows is None else s.data.train[c.rows]
        # the validation rows first (a pass stopped early still covers them); under
        # cross-validation the training rows are the same rows
        index = np.concatenate([s.data.valid, train[~np.isin(train, s.data.valid)]])
        done = self.encoded.get(c.encoder)
        return index if done is None else index[~done[index]]

    def mark_encoded(self, representation: str, index: np.ndarray) -> None:
        """The vectors of ``representation`` for the documents at ``index`` are cached."""
        done = self.encoded.setdefault(representation, np.zeros(len(self.search.data.docs), bool))
        done[index] = True

    # -- estimates ------------------------------------------------------------------------------
    def cost(self, c: Candidate) -> float:
        """Seconds ``c`` will take on its rows: its steps' preparations not paid yet, then a
        frozen encoder's pass over what is not cached yet and the head on the vectors (no probe:
        its slice may be cached), or its prior (on every row) scaled to its rows; else the
        search's estimate (its pair's state, a probe, a prior)."""
        s = self.search
        setup, encoding = (0.0 if c.factory is not None else self.setup(c)), self.pass_seconds(c)
        if c.factory is None and (encoding or setup):
            n = len(s.data.train)
            return setup + (encoding + HEADS[c.head].cost * s.data.n_rows(c) / 1000 if encoding
                            else c.prior * (n if c.rows is None else len(c.rows)) / max(n, 1))
        return s.estimate(c) + encoding

    def estimate(self, c: Candidate, room: float = 0.0) -> bool | LeaveOut:
        """Set ``c.estimate`` (and its rows, or a sized head's recipe, where it starts on what is
        cheap): True; a `LeaveOut` (falsy) where nothing of it fits, for the schedule to hand the
        engine; False where it waits for the defaults the ``room`` is kept for (`plan`)."""
        s = self.search
        if c.tier in TRAINING_TIERS and s.time.left() < MIN_PROBE_SECONDS and not s.costs[c.pair].measured:
            s.board.reached(c.tier)  # not the time to import torch, load and measure
            settle(c, estimate=max(1.25 * c.prior, MIN_PROBE_SECONDS))
            return LeaveOut(c)
        first = c.variant_of is None and c.grown_from is None
        try:
            sized = first and self.sizes_itself(c)
        except ResourceNotFound as err:  # offline, its model never fetched: the rest goes on
            settle(c, estimate=c.prior)
            return LeaveOut(c, f"its model is not on this machine: {err}")
        if sized:
            return self.plan(c, room)
        settle(c, estimate=self.cost(c))
        if first and c.rows is None:
            self.start_small(c)
        elif c.variant_of is not None and not s.fits(c) and isinstance(self.head(c), SizesItself):
            self.cut(c)
        return True

    def start_small(self, c: Candidate) -> None:
        """A model whose fit on every training row costs more than `START_SHARE` of the time left
        starts on the largest stratified subsample that fits in it (at least `MIN_ROWS`); where
        that leaves not even a doubling to grow by, on every row, or the most that fit. A
        baseline is the yardstick every model is judged by and the pick where none beats it:
        it is cut only where every row does not fit the time left (a TF-IDF baseline on half
        of 20newsgroups' rows scored 3 points below the one on all of them)."""
        s, n = self.search, len(self.search.data.train)
        share = (1.0 if c.kind == "baseline" else START_SHARE) * s.time.left()
        if c.estimate <= share or n <= MIN_ROWS:
            return

        def cost(m: int) -> float:
            return self.cost(self.on_rows(c, m))

        m = MIN_ROWS if cost(MIN_ROWS) > share else largest(
            MIN_ROWS, n, lambda m: cost(m) <= share, max(n // 100, 1))
        if 2 * m > n:
            m = n if cost(n) <= s.time.left() else largest(m, n, lambda k: cost(k) <= s.time.left(),
                                                       max(n // 100, 1))
        settle(c, self.on_rows(c, m), estimate=cost(m))

    def on_rows(self, c: Candidate, m: int) -> Candidate:
        """A draft of ``c`` on ``m`` stratified training rows (every row where ``m`` reaches them)."""
        n = len(self.search.data.train)
        return c.planned(rows=None if m >= n else self.search.data.sample_rows(m))

    # -- growth ---------------------------------------------------------------------------------
    def grown(self, c: Candidate) -> Candidate | None:
        """The next fit of scored ``c``: `GROWTH` times its rows, or at every row its head's own
        epochs, with its estimate; the whole time left where a step after it would not fit.
        None: it is grown already, or its next step does not fit."""
        s, n = self.search, len(self.search.data.train)
        head = self.head(c) if c.factory is None else None
        if isinstance(head, SizesItself):
            return self._grown_recipe(c, head)
        if c.rows is None:
            return None
        rows = min(n, GROWTH * len(c.rows))
        grown = self.on_rows(c.but(grown_from=c, variant_of=None), rows)
        grown = grown.planned(estimate=self.cost(grown))
        if grown.estimate > s.time.left() and rows < n:  # what fits, when that is still a step
            def cost(m: int) -> float:
                return self.cost(self.on_rows(grown, m))

            low = int(1.5 * len(c.rows))
            if low >= n or cost(low) > s.time.left():
                return None
            m = largest(low, n, lambda m: cost(m) <= s.time.left(), max(n // 100, 1))
            grown = self.on_rows(grown, m).planned(estimate=cost(m))
        return grown if grown.estimate <= s.time.left() else None

    def _grown_recipe(self, c: Candidate, head) -> Candidate | None:
        s, state = self.search, self.search.costs[c.pair]
        if not state.measured or (c.rows is None and c.recipe.get("head__epochs") == int(head.epochs)
                                  and not c.truncated):
            return None
        last = c.fit_seconds + c.predict_seconds
        target = GROWTH * last
        if s.time.left() - target < GROWTH * target:  # no step after this one: what is left
            target = s.time.left()
        grown = self.sized(c.but(grown_from=c, variant_of=None, recipe={}, rows=None), head, state,
                           seconds=target)
        if grown is None or grown.estimate > s.time.left():
            return None
        if work_of(grown.build(), s.data.n_rows(grown)) <= 1.5 * work_of(c.build(), s.data.n_rows(c)):
            return None  # not a step: the time left buys little more than it had
        return grown

    # -- a head that sizes itself ---------------------------------------------------------------
    def plan(self, c: Candidate, room: float = 0.0) -> bool | LeaveOut:
        """Size ``c``'s first recipe: the richest that fits `START_SHARE` of the time left (or its
        cheapest, where even that share does not pay for it; or, where a step of growth after its
        cheapest would not fit, the richest that fits the time left), on its pair's measured cost;
        before any is measured, on a cost scaled from a measured one (`scaled`), its estimate
        then holding the probe the schedule runs once the order chooses it (fits of a few steps,
        the head's `probe_recipe`: slices of the rows, or SetFit's every row cut to a few steps);
        where no probe is cheaper than a fit, on that cost with the margin, its first fit
        measuring it. Under cross-validation a fit is a fold's, and its own recipe's refit on
        every document is kept out of the time its folds are sized in (`refit_kept`). A `LeaveOut`
        where no recipe fits (without a probe where the scaled cost says so), False where none
        fits beside the ``room`` kept for others; ``c`` then holds its full recipe's estimate."""
        s, head = self.search, self.head(c)
        # from every training row (a recipe cuts them); ``n`` a fit's rows
        base = c.planned(rows=None, seed=s.data.seed)
        state, n = s.costs[c.pair], s.data.n_rows(base)
        probe = self.setup(c)  # a model not fetched yet: its fetch counts
        # what the leaderboard's note says the cost came from: this pair's own probe or fits, or
        # another pair's step scaled (it was then never measured on itself)
        source = " (measured on itself here)"
        if not state.measured and head.probe_recipe(PROBE_STEPS[1], n) is None:
            # its first fit measures it (quicker than a probe): sized on a cost scaled from one
            # measured here, with the margin (no probe brings it back), else its own recipe at
            # its prior
            scaled = self.scaled(c, head)
            if scaled is None:
                settle(c, base, estimate=probe + c.prior, recipe={**self.own(c), **{
                    f"head__{k}": v for k, v in head.sized_for(n, np.inf, lambda work: 0.0)[0].items()}})
                return True
            state = PairState(overhead=scaled[0].overhead, rate=scaled[0].rate)
            source = f" here ({scaled[1]}; never measured on itself)"
        elif not state.measured:
            if s.time.left() < MIN_PROBE_SECONDS:
                s.board.reached(c.tier)
                settle(c, base, estimate=c.prior)
                left = format_seconds(max(s.time.left(), 0))
                return LeaveOut(c, f"too little time left to measure it ({left}); it needs roughly "
                                   f"{format_seconds(c.prior)} on two CPU cores",
                                need=MIN_PROBE_SECONDS + c.prior)
            scaled = self.scaled(c, head)
            if scaled is None:  # nothing measured to scale from: the schedule probes it first,
                # then sizes it; worth, until then, the probe and its cheapest recipe's prior
                settle(c, base, estimate=probe + MIN_PROBE_SECONDS + c.prior * min(1.0, MIN_ROWS / n))
                s.costs[c.pair].await_probe()
                return True
            state, source = scaled[0], f" here ({scaled[1]}; never measured on itself)"
            probes = (head.probe_recipe(steps, n) for steps in (1, *PROBE_STEPS))
            probe += state.margin * sum(state.fit_seconds(clone(head).set_params(**params).fit_work(rows))
                                        for params, rows in probes)
            s.costs[c.pair].await_probe()
        # what is cheap: the share of the time left a first fit may take; where even its
        # cheapest recipe costs more, that recipe, unless a step of growth after it would not fit
        # either: then the richest recipe the time left pays for, at once
        start = max(START_SHARE * s.time.left(), 0.0) + probe
        least = self.fit_cost(head, state)(head.least_work(n))

        def first(keep: float) -> Candidate | None:  # sized with ``keep`` seconds kept for its refit
            once = (1 + GROWTH) * least + probe + room + keep > s.time.left()
            return self.sized(base, head, state, probe, room, start, keep) or self.sized(
                base, head, state, probe, room, None if once else least + probe + room + 2 * DECIDING,
                keep)

        # the refit's time is kept where its cheapest folds still fit beside it
        draft = next(filter(None, map(first, dict.fromkeys((self.refit_kept(head, state), 0.0)))), None)
        if draft is not None:
            settle(c, draft)
            return True
        settle(c, base, recipe=self.own(c), estimate=self.fit_cost(head, state)(head.fit_work(n)))
        if room:  # it waits for the defaults expected to bring more
            return False
        s.board.reached(c.tier)
        return LeaveOut(c, f"one fit needs about {format_seconds(c.estimate)}{source}, "
                           f"{format_seconds(max(s.time.left(), 0))} were left (nor its cheapest recipe, "
                           f"{head.least_said(n)})", need=probe + c.estimate, including="the full recipe")

    def refit_kept(self, head, state: PairState) -> float:
        """Under cross-validation, the seconds a head that sizes itself keeps back from the time
        left while its folds are sized (`plan` sizes them without it where its cheapest folds do
        not fit beside it): its own recipe's refit, one fit on every document with the margin
        (the folds only score it; the refit is the model a user gets, and the finish refits a cut
        pick on its own recipe: `Finish.restored`); none where rows are held out (its fit is the
        model)."""
        s = self.search
        return 0.0 if s.data.folds is None else state.seconds(head.fit_work(len(s.data.docs)))

    def fit_cost(self, head, state: PairState) -> Callable[[float], float]:
        """Seconds of a fit of ``head``'s ``work`` on ``state``'s cost, with its predictions on the
        validation rows; under cross-validation, once a fold."""
        s, valid = self.search, len(self.search.data.valid)
        return lambda work: state.seconds(s.data.fits_each * work, valid, head.predict_work(valid))

    def sized(self, c: Candidate, head, state: PairState, probe: float = 0.0,
              room: float = 0.0, seconds: float | None = None, keep: float = 0.0) -> Candidate | None:
        """A draft of ``c`` with the richest recipe of ``head`` that fits ``seconds`` (the time
        left, less ``keep``) less ``probe`` and ``room`` on ``state``'s cost, and its estimate;
        None when none does."""
        s = self.search
        whole = c.planned(rows=None, recipe=self.own(c))
        n, cost = s.data.n_rows(whole), self.fit_cost(head, state)  # every row; under CV a fold's fit's
        budget = min(s.time.left() if seconds is None else seconds, s.time.left() - keep)
        sized = head.sized_for(n, budget - probe - room - DECIDING, cost)
        if sized is None:
            return None
        params, rows = sized
        recipe = {**whole.recipe, **{f"head__{k}": v for k, v in params.items()}}
        draft = whole.planned(recipe=recipe, rows=s.data.sample_rows(rows) if rows < n else None,
                              params={k: v for k, v in c.params.items() if k not in recipe})
        short = params.get("max_length", int(head.max_length)) < int(head.max_length)
        return draft.planned(
            estimate=cost(work_of(draft.build(), rows)) + probe, least=cost(head.least_work(n)) + probe,
            share=head.gain_share(params, rows, n, 1 if s.data.classes is None else len(s.data.classes)),
            truncated=(f"read to {params['max_length']} word pieces where 95% of the documents need "
                       f"{int(head.max_length)}: the time left paid for no more" if short else ""))

    def cut(self, c: Candidate) -> None:
        """A variant of a head that sizes itself, too dear on its first's recipe, gets the richest
        recipe of its own settings that fits the time left on no fewer rows than its first (else
        it stays too dear): a second fine-tuned model for the ensemble, at its share of the gain."""
        own = {k[6:]: v for k, v in c.params.items() if k.startswith("head__")}
        draft = self.sized(c, clone(self.head(c)).set_params(**own), self.search.costs[c.pair])
        if draft is not None and self.search.data.n_rows(draft) >= self.search.data.n_rows(c.variant_of):
            settle(c, draft)

    def scaled(self, c: Candidate, head) -> tuple[PairState, str] | None:
        """Before ``c``'s head is measured: its pair's cost scaled from one measured on this
        device by their compute (blocks x width squared; no margin: its probe brings it back
        before a fit), else from the prologue's measured pass (`from_pass`), and what it was
        scaled from; None when neither is measured. Both heads read the data's own length, so
        the work a unit counts is the same for both."""
        s = self.search
        donors = [(pair, other.head) for pair, other in list(s.costs.items()) if pair != c.pair
                  and isinstance(other.head, SizesItself) and other.measured]
        if not isinstance(head, SizesItself):
            return None
        if not donors:
            return self.from_pass(head)
        pair, other = donors[0]
        ratio = head.compute() / other.compute()
        measured = s.costs[pair]
        state = PairState(overhead=measured.overhead, rate=measured.rate).scaled(ratio)
        return state, f"scaled from {pair[1]}'s measured step by its {ratio:.1f}x compute"

    def from_pass(self, head) -> tuple[PairState, str] | None:
        """A cost for ``head`` from the prologue's pass on this device, with no load
        (`rate_from_pass`: it errs cheap, deciding whether a probe is worth its time, never a
        recipe). None before the pass."""
        from ..heads.finetune.sizing import compute, rate_from_pass

        if self.per_doc is None:
            return None
        encoder = REPRESENTATIONS[ENCODER].factory()
        return (PairState(rate=rate_from_pass(head, self.per_doc, encoder)), f"the encoder's "
                f"measured pass, {compute(head) / compute(encoder):.1f}x its compute, as a lower bound")


def probe_fits(s, c: Candidate, head, own: dict) -> Callable[[], None]:
    """What measures ``head``'s cost on its device: an untimed warm-up fit of one step, then
    fits of `PROBE_STEPS` steps (each as the head's `probe_recipe` sets it); their difference is
    the steps, the rest loading the model. The search's state of ``c``'s pair learns it (a
    `embedkit.tuning._candidate.Job`'s ``run``)."""
    n = len(s.data.train)
    rng = np.random.default_rng(s.data.seed)

    def fit_of(steps: int) -> tuple[Candidate, np.ndarray | None]:
        params, rows = head.probe_recipe(steps, n)
        one = c.but(recipe={**own, **{f"head__{k}": v for k, v in params.items()}}, rows=None,
                    grown_from=None)
        # label sets: a row of each label a slice lacks joins it (a head cannot learn an absent label)
        return one, (None if rows >= n else covering(np.sort(rng.choice(n, rows, replace=False)),
                                                     s.data.y_train, rng.permutation(n)))

    warm, *timed = (fit_of(steps) for steps in (1, *PROBE_STEPS))
    works = tuple(work_of(one.build(), n if rows is None else len(rows)) for one, rows in timed)

    def fit(one: Candidate, rows: np.ndarray | None) -> None:
        one.build().fit(s.data.X_train if rows is None else take(s.data.X_train, rows),
                        s.data.y_train if rows is None else s.data.y_train[rows])

    def run() -> str:
        state = s.costs[c.pair]
        try:  # the first fit pays one-time costs (imports, kernels): it is not timed
            fit(*warm)
            state.measure_steps(lambda i: fit(*timed[i]), works)
        except ValueError as err:  # e.g. a class missing from a probe slice: the prior stands
            state.observe(work_of(c.but(recipe=own, rows=None, grown_from=None).build(), n),
                          c.prior / 1.25)
            return f"{c.tier} probe: {err}"
        step = state.rate * (works[1] - works[0]) / (PROBE_STEPS[1] - PROBE_STEPS[0])
        return (f"{c.tier} probe: {step:.2f} s a step of {int(head.batch_size)} at max_length "
                f"{int(head.max_length)} (95% of the documents fit), {state.overhead:.1f} s to load")

    return run

