"""What the budgeted search tries, and in which order: the schedule behind `embedkit.Tuner`.

* **Tiers are data** (`TIERS`): each holds the registry pairs of some kinds
  (`embedkit.registry.pair_kind`), the gain its first model is expected to bring over the
  five-line baselines (accuracy points) and its lane (the device lane on an accelerator).
* **The prologue**: the plain TF-IDF baseline, the frozen encoder's pass over every document
  (measured on a sample first, cached for every model that reads it), the plain MiniLM baseline.
* **Then by value per second.** Every pair's default runs first, the one with the most expected
  gain per second of this machine next (`embedkit.tuning._engine.Search.estimate`: measured, never a
  CPU table for a device), unless it would leave too little time for a default expected to
  bring more (`Schedule._roomy`). A head that sizes itself (``sized_for``: fine-tuning) is
  measured by a few steps on its device and given the richest recipe that fits the time left,
  at the share of its gain that recipe keeps. On two CPU cores the cheap tiers come first; on a
  GPU fine-tuning comes right after the baselines, on its own lane.
* **The fill.** Once a lane's defaults are done it takes variants (the registry ``space``): a
  pair within one standard error of the leader gets the full value, one three or more below
  only the time nothing within reach can use. Variants are of a pair's first model, so nothing
  runs twice; a fine-tuning variant too dear for its first's recipe gets the richest that fits
  on the same rows (`Schedule._cut`): a second fine-tuned model for the ensemble.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from .._budget import DECIDING, format_seconds, largest
from ..registry import HEADS, REPRESENTATIONS, pair_kind, sampled_settings
from ._costs import MARGIN, CostRecord, sample_seconds, timed_pass, work_of
from ._engine import Candidate

__all__ = ["TIERS", "Schedule", "Tier", "tier_of"]


@dataclass(frozen=True)
class Tier:
    """A tier of the search: the pair kinds it holds, the gain (accuracy points over the better
    baseline) its first model is expected to bring, its lane where there is an accelerator, and
    whether its models may fit on a Dask cluster's workers (``remote``: they need nothing this
    process has cached)."""

    name: str
    kinds: tuple[str, ...]
    gain: float
    lane: str = "cores"
    remote: bool = False


TIERS = (
    Tier("sparse + linear", ("sparse",), gain=1.0, remote=True),
    Tier("static vectors", ("static",), gain=0.5, remote=True),
    Tier("frozen encoder", ("frozen",), gain=1.0),
    Tier("fine-tuning", ("finetune",), gain=4.0, lane="device"),
)
#: a variant is expected to bring this share of its tier's gain
VARIANT_SHARE = 0.25
#: the registry pair whose settings generalise a baseline's: when the baseline leads, that pair's
#: variants are within its reach (n-grams, sublinear tf, min_df; C is chosen by inner CV)
GENERALISES = {"plain TF-IDF + LR": ("tfidf", "logreg-cv"),
               "plain MiniLM + LR": ("minilm", "logreg-cv")}
#: seconds below which a fine-tuning head is not even measured
MIN_PROBE_SECONDS = 15.0
#: training steps of the two timed probe fits of a head that sizes itself
PROBE_STEPS = (2, 6)
#: the fewest training rows a default that does not fit on all of them is cut to
MIN_ROWS = 1000
#: the representation whose pass over every document the prologue pays once (and caches)
ENCODER = "minilm"
#: the share of the time left the encoder's pass may take; beyond it the pass covers a subsample
#: of the training rows (at least this many), and the frozen tier fits on those
ENCODE_SHARE, MIN_ENCODED_ROWS = 0.5, 200
#: seconds to load the frozen encoder cold (importing torch and transformers, reading the
#: weights; CPU time on 2 cores): it is not loaded where that is not left
ENCODER_LOAD = 8.0


def _passed(c) -> tuple:
    """What a frozen pass over ``c``'s rows is known by: its representation and rows."""
    return c.representation, None if c.rows is None else np.asarray(c.rows).tobytes()


def _encoder_ratio(representation: str) -> float:
    """A frozen representation's time a document over the prologue encoder's (registry costs)."""
    return REPRESENTATIONS[representation].cost / REPRESENTATIONS[ENCODER].cost


def tier_of(representation: str, head: str) -> Tier:
    """The tier that holds a registry pair."""
    kind = pair_kind(representation, head)
    return next((t for t in TIERS if kind in t.kinds), TIERS[0])


class Schedule:
    """The order of a `embedkit.tuning._engine.Search`'s candidates: `prologue`, then `next` per lane."""

    def __init__(self, search):
        self.search = search
        self.defaults: list[Candidate] = []
        self.tried: set[tuple] = set()
        self._heads: dict[tuple, object] = {}
        self._ready: dict[str, bool] = {}
        #: pairs sized on a scaled cost, measured by a probe once the order chooses them
        self._unprobed: set[tuple] = set()
        #: seconds a document of the prologue's encoder pass, as measured (None: not measured)
        self.per_doc: float | None = None
        #: the frozen passes paid (their vectors cached): (representation, its rows' bytes or None),
        #: and the seconds a document another encoder's pass measured (`_encode_rows`)
        self._encoded, self._rates = set(), {}

    def _candidate(self, rep: str, head: str) -> Candidate:
        s, tier = self.search, tier_of(rep, head)
        encoding = 0.0 if rep == ENCODER else REPRESENTATIONS[rep].cost  # the prologue pays it
        lane = ("device" if tier.lane == "device" and s.device_lane
                else "cluster" if s.client is not None and tier.remote else "cores")
        return Candidate(representation=rep, head=head, tier=tier.name, cache=s.cache, lane=lane,
                         prior=(encoding + HEADS[head].cost) * len(s.train) / 1000)

    def _reached(self, tier: str) -> None:
        if tier not in self.search.tiers_reached:
            self.search.tiers_reached.append(tier)

    # -- the prologue ---------------------------------------------------------------------------
    def prologue(self, baselines: dict) -> None:
        """Both baselines (the frozen encoder's pass before the second); every pair's default
        waits, the frozen ones left out when the pass does not fit."""
        s = self.search
        self.defaults = [self._candidate(r, h) for r, h in s.pairs
                         if not (s.finetune is False and pair_kind(r, h) == "finetune")]
        tiers = {t.name: sum(c.tier == t.name for c in self.defaults) for t in TIERS}
        s.say(f"{s.clock.stamp()} {len(s.train):,} training rows, {len(s.valid):,} validation "
              "rows; tiers: " + ", ".join(f"{t} ({n} pairs)" for t, n in tiers.items() if n))
        (tfidf, build_tfidf), (minilm, build_minilm) = list(baselines.items())[:2]
        self._reached("baselines")
        s.start(Candidate(name=tfidf, representation="plain TF-IDF", head="LR", tier="baselines",
                          kind="baseline", factory=build_tfidf))
        self._encode(minilm, build_minilm)

    def _encode(self, name: str, build) -> None:
        """The frozen encoder's pass, once (cached for every model that reads it), then the plain
        MiniLM baseline on its vectors. Where the pass over every document would take more than
        `ENCODE_SHARE` of the time left it covers the validation rows and a stratified
        subsample of the training rows, which the frozen tier's models then fit on."""
        s = self.search
        frozen = [c for c in self.defaults if c.tier == "frozen encoder"]
        encoder = REPRESENTATIONS[ENCODER].factory()
        if s.cache is not None:
            encoder.set_params(cache=s.cache)
        # the least pass: the validation rows and `MIN_ENCODED_ROWS` training rows, at the prior
        least = min(len(s.docs), len(s.valid) + MIN_ENCODED_ROWS)
        rough = ENCODER_LOAD + REPRESENTATIONS[ENCODER].cost * least / 1000
        baseline = Candidate(name=name, representation="plain MiniLM", head="LR", tier="baselines",
                             kind="baseline", factory=build)
        if rough > s.left():  # not even the time to load it and encode that: not started
            for c in [baseline, *frozen]:
                c.estimate = rough
                s.leave_out(c, f"loading the encoder and a pass over the validation rows and "
                               f"{least - len(s.valid):,} training rows need about "
                               f"{format_seconds(rough)}; a budget of about "
                               f"{format_seconds(s.clock.elapsed() + rough + s.reserve())} "
                               "would include it")
            return
        began = time.monotonic()
        encoder.fit(s.docs[:2])  # loads the model: paid once, not per document
        sample = np.random.default_rng(s.seed).choice(len(s.docs), min(64, len(s.docs)), replace=False)
        per_doc = self.per_doc = sample_seconds(encoder, s.docs[sample])
        if "cluster" in s.lanes:  # a worker thread runs one torch thread; this process, all cores
            from .._machine import available_cores

            per_doc *= available_cores() / s.lanes["cluster"].slots
        baseline.estimate = need = per_doc * len(s.docs)
        rows, index = None, np.arange(len(s.docs))
        if need > ENCODE_SHARE * s.left():
            m = min(int(ENCODE_SHARE * s.left() / per_doc) - len(s.valid), len(s.train))
            if m < MIN_ENCODED_ROWS:
                enough = s.clock.elapsed() + (need + s.reserve() + 30) / ENCODE_SHARE
                for c in [baseline, *frozen]:
                    c.estimate = need
                    s.leave_out(c, f"the encoder's pass over even {MIN_ENCODED_ROWS} of the "
                                   f"{len(s.docs):,} documents does not fit the time left; a budget "
                                   f"of about {format_seconds(enough)} would include all of them")
                return
            rows = s.sample_rows(m)
            index = np.concatenate([s.valid, s.train[rows]])
        docs = s.docs[index]
        where = ""
        if "cluster" in s.lanes:  # on the workers, kept in this process's cache
            from ..cache import store_encoded

            store_encoded(encoder, list(docs), s.lanes["cluster"].encode(encoder, docs))
            where = f" on the cluster's {len(s.client.nthreads())} workers"
        else:
            _, seconds = timed_pass(encoder, docs, per_doc)
            # later estimates scale from the pass's own rate (the sample's pays warm-up, one batch)
            if (fresh := len(index) - int(np.isin(index, sample).sum())) >= len(sample):
                self.per_doc = MARGIN * seconds / fresh
        s.encoder_seconds = time.monotonic() - began
        for c in (baseline, *frozen):  # what a refit on every document would encode besides
            ratio = _encoder_ratio(c.representation) if c in frozen else 1.0
            c.rows, c.extra_refit = rows, ratio * self.per_doc * (len(s.docs) - len(docs))
        covered = "every document" if rows is None else (
            f"{len(docs):,} of the {len(s.docs):,} documents (the validation rows and {len(rows):,} "
            f"training rows; all of them would need about {format_seconds(need)})")
        s.say(f"{s.clock.stamp()} frozen encoder: {covered} encoded once{where} in "
              f"{s.encoder_seconds:.0f} s (cached for every model that reads it)")
        s.start(baseline)

    # -- the order ------------------------------------------------------------------------------
    def next(self, lane: str, later: frozenset = frozenset()) -> Candidate | None:
        """The candidate ``lane`` runs next: a pair's default while any waits, else a variant;
        the most expected gain per estimated second among those that fit, where it leaves room
        for the defaults waiting that are expected to bring more (`_roomy`; else it waits,
        ``later``). None: nothing fits."""
        s = self.search
        waiting = [c for c in self.defaults if c.status == "waiting"]
        s.filling = not waiting and not any(c in s.running for c in self.defaults)
        options = [c for c in waiting if c.lane == lane and c not in later] or self._variants(lane)
        chosen, value = None, (False, 0.0)
        origin = {}  # a variant's key before `_cut`: tried once, however it was cut
        for c in sorted(options, key=lambda c: c.prior):  # the cheaper measured first
            origin[c] = c.key
            if not self._estimate(c) or (c.variant_of is not None and c.key in self.tried):
                continue
            if not s.fits(c):
                if c.variant_of is None:
                    self._reached(c.tier)
                    s.leave_out(c)
                continue
            reach = 1.0 if c.variant_of is None else self._reach(c.pair)
            # within reach first; beyond it only for time nothing within reach can use
            gain = (reach > 0, self._gain(c) * (reach or 1.0) / max(c.estimate, 0.1))
            if gain > value:
                chosen, value = c, gain
        if chosen is not None and chosen.variant_of is None and not self._roomy(chosen, waiting):
            return self.next(lane, later | {chosen})
        if chosen is not None and (self._setup(chosen) or chosen.pair in self._unprobed
                                   or (self._pass(chosen) and s.cache is not None)):
            self._prepare(chosen)  # prepared, encoded or measured, it is estimated anew
            return self.next(lane)
        if chosen is not None:
            self.tried |= {chosen.key, origin[chosen]}
            self._reached(chosen.tier)
        elif any(c.variant_of is None for c in options):  # the last defaults, all left out: the fill
            return self.next(lane)
        return chosen

    def _roomy(self, c: Candidate, waiting: list[Candidate]) -> bool:
        """Whether ``c`` (a head that sizes itself cut to fit) leaves the time for the cheapest
        recipes of the defaults waiting in its lane that are expected to bring more gain: a
        cheaper model must not take the time a better one then no longer fits in."""
        s, gain = self.search, self._gain(c)
        room = sum(least for o in waiting if o is not c and o.lane == c.lane and o.status == "waiting"
                   and (least := o.estimate if o.least is None else o.least) <= s.left()
                   and self._gain(o) > gain)
        return c.estimate <= s.left() - room or (hasattr(self._head(c), "sized_for")
                                                  and self._plan(c, room))

    def _setup(self, c: Candidate) -> float:
        """Seconds of the one-time preparations ``c``'s steps still need (0: done)."""
        total = 0.0
        for name, entry in ((c.representation, REPRESENTATIONS[c.representation]),
                            (c.head, HEADS[c.head])):
            if entry.setup and name not in self._ready:
                self._ready[name] = getattr(entry.factory(), "ready", lambda: True)()
            total += 0.0 if not entry.setup or self._ready[name] else entry.setup
        return total

    def _prepare(self, c: Candidate) -> None:
        """Pay ``c``'s steps' one-time preparations (a distillation, a model's fetch; kept on
        disk), then the probe of a head that sizes itself or a second frozen encoder's pass, so
        the fits that follow are measured without them."""
        s = self.search
        for name, entry in ((c.representation, REPRESENTATIONS[c.representation]),
                            (c.head, HEADS[c.head])):
            if entry.setup and not self._ready.get(name, True):
                began = time.monotonic()
                try:
                    entry.factory().prepare()
                except Exception as err:  # e.g. no network for a fetch: its pairs go, not the search
                    for o in [o for o in self.defaults if o.status == "waiting" and name in o.pair]:
                        self._reached(o.tier)
                        s.leave_out(o, f"preparing {name} failed ({err})"[:300])
                    return
                self._ready[name] = True
                s.say(f"{s.clock.stamp()} {name}: prepared once in "
                      f"{time.monotonic() - began:.0f} s (kept on disk for every later run)")
        if not self._setup(c) and c.pair in self._unprobed:
            self._unprobed.discard(c.pair)
            self._probe(c, self._head(c))
        elif not self._setup(c) and self._pass(c):
            self._encode_rows(c)

    def _encode_rows(self, c: Candidate) -> None:
        """A frozen encoder's pass over ``c``'s rows and the validation rows, paid once and cached
        like the prologue's: its models fit on the vectors, their cost records count the head.
        A pass that its own rate shows cannot finish in the time left stops there: its pairs are
        then estimated at that rate (`_pass`), and left out."""
        s, began, rep = self.search, time.monotonic(), c.representation
        index = np.concatenate([s.valid, s.train if c.rows is None else s.train[c.rows]])
        try:
            encoder = REPRESENTATIONS[rep].factory().set_params(cache=s.cache)
            done, seconds = timed_pass(encoder.fit(s.docs[index[:2]]), s.docs[index],
                                       _encoder_ratio(rep) * (self.per_doc or 0.01), s.left)
        except Exception as err:  # its models' fits then fail and say so
            s.say(f"{s.clock.stamp()} frozen encoder: {rep}: failed ({err})"[:300])
        else:
            self._rates[rep] = MARGIN * seconds / max(done, 1)
            if done < len(index):
                s.say(f"{s.clock.stamp()} frozen encoder: {rep}: stopped after {done:,} of "
                      f"{len(index):,} documents ({seconds:.0f} s): the rest would not fit the time left")
                return
            s.say(f"{s.clock.stamp()} frozen encoder: {rep}: {len(index):,} documents encoded "
                  f"once in {time.monotonic() - began:.0f} s (cached for every model that reads it)")
        self._encoded.add(_passed(c))
        for o in self.defaults:  # their priors held the pass
            if o.representation == c.representation:
                o.prior = HEADS[o.head].cost * s.n_rows(o) / 1000

    def _gain(self, c: Candidate) -> float:
        """Expected points over the baselines: the pair's entries' (head first), else its
        tier's; a variant's a share of it (`next` weighs it by its pair's reach)."""
        declared = [e.gain for e in (HEADS[c.head], REPRESENTATIONS[c.representation])
                    if e.gain is not None]
        gain = c.share * (declared[0] if declared else
                          next(t for t in TIERS if t.name == c.tier).gain)
        return gain if c.variant_of is None else gain * VARIANT_SHARE

    def _reach(self, pair: tuple) -> float:
        """1 when the pair's best is within one standard error of the leader's score, falling
        to 0 at three: what a variant of it can still change."""
        s = self.search
        singles = [c for c in s.candidates if c.status == "scored" and c.kind != "ensemble"]
        leader = max(c.score for c in singles)
        best = max((c.score for c in singles
                    if c.pair == pair or GENERALISES.get(c.name) == pair), default=-math.inf)
        se = (max(math.sqrt(max(leader * (1 - leader), 0) / len(s.valid)), 0.005)
              if s.scoring == "accuracy" else 0.01 * max(abs(leader), 1.0))
        return float(np.clip(1 - (leader - best - se) / (2 * se), 0.0, 1.0))

    def _variants(self, lane: str) -> list[Candidate]:
        """Variants of the scored pairs, not tried yet."""
        s, out = self.search, []
        for first in (f for f in self.defaults if f.status == "scored" and f.lane == lane):
            base = {**first.recipe, **first.params}
            for params in sampled_settings(first.representation, first.head, None, s.seed):
                option = first.but(params={**first.params, **params}, variant_of=first)
                if {**base, **params} != base and option.key not in self.tried:
                    out.append(option)
        return out

    # -- estimates, and the recipe of a head that sizes itself -----------------------------------
    def _estimate(self, c: Candidate) -> bool:
        """Set ``c.estimate``; a head that sizes itself gets its recipe first (False: it was left
        out, no recipe fits)."""
        s = self.search
        if c.tier == "fine-tuning" and s.left() < MIN_PROBE_SECONDS and not s.costs[c.pair].measured:
            self._reached(c.tier)  # not the time to import torch, load and measure
            c.estimate = max(1.25 * c.prior, MIN_PROBE_SECONDS)
            s.leave_out(c)
            return False
        if c.variant_of is None and hasattr(self._head(c), "sized_for"):
            return self._plan(c)
        # a preparation not paid yet (a model to fetch) counts once; `next` pays it first
        setup, encoding = self._setup(c), self._pass(c)
        if encoding or setup:  # the pass, then the head (no probe: its slice may be cached); else the prior
            c.estimate = setup + (encoding + HEADS[c.head].cost * s.n_rows(c) / 1000 if encoding else c.prior)
            return True
        c.estimate = s.estimate(c)
        if c.variant_of is None and c.rows is None and not s.fits(c):
            self._subsample(c)
        elif c.variant_of is not None and not s.fits(c) and hasattr(self._head(c), "sized_for"):
            self._cut(c)
        return True

    def _pass(self, c: Candidate) -> float:
        """Seconds the pass of a frozen encoder other than the prologue's still needs over
        ``c``'s training rows and the validation rows (its own measured seconds a document, else
        the prologue's times the registry's cost ratio; and a load); 0 once paid (`_encode_rows`),
        or for another kind."""
        s, rep = self.search, c.representation
        if c.tier != "frozen encoder" or rep == ENCODER or _passed(c) in self._encoded:
            return 0.0
        per_doc = self._rates.get(rep) or _encoder_ratio(rep) * (
            self.per_doc or REPRESENTATIONS[ENCODER].cost / 1000)
        return ENCODER_LOAD + per_doc * (s.n_rows(c) + len(s.valid))

    def _subsample(self, c: Candidate) -> None:
        """A default that does not fit on every training row gets the largest stratified
        subsample that fits (at least `MIN_ROWS`), its pair's record scaling the estimate."""
        s, n = self.search, len(self.search.train)

        def estimate(m: int) -> float:
            c.rows = s.sample_rows(m)
            return s.estimate(c)

        low, left = min(n, MIN_ROWS), s.left() - DECIDING
        if low >= n or estimate(low) > left:
            c.rows = None
            c.estimate = s.estimate(c)
            return
        c.estimate = estimate(largest(low, n, lambda m: estimate(m) <= left, max(n // 100, 1)))

    def _head(self, c: Candidate):
        """The pair's head, with the data's ``max_length`` where it sizes itself (once)."""
        if c.pair not in self._heads:
            head = HEADS[c.head].factory()
            if hasattr(head, "length_for"):
                head.set_params(max_length=head.length_for(self.search.X_train))
            self._heads[c.pair] = head
        return self._heads[c.pair]

    def _plan(self, c: Candidate, room: float = 0.0) -> bool:
        """Size ``c``'s recipe to the time left on its pair's measured cost; before any is
        measured, on a cost scaled from a measured one (`_scaled`), its estimate then holding
        the probe that `next` pays once the order chooses it. False: left out, no recipe fits
        (without a probe where the scaled cost says so)."""
        s, head = self.search, self._head(c)
        record, n, batch = s.costs[c.pair], len(s.train), int(head.batch_size)
        # a model not fetched yet: its fetch counts, and nothing runs it before `next` pays it
        setup = self._setup(c)
        c.seed, probe, source = s.seed, setup, ""
        if not record.measured and n <= PROBE_STEPS[1] * batch:  # small data: quicker run than measured
            c.recipe = {"head__max_length": int(head.max_length), "head__epochs": int(head.epochs),
                        **({"head__k": int(head.k)} if head.fine_tune == "last_k" else {})}
            c.estimate = setup + c.prior
            return True
        if not record.measured:
            if s.left() < MIN_PROBE_SECONDS:
                self._reached(c.tier)
                c.estimate = c.prior
                enough = s.clock.elapsed() + MIN_PROBE_SECONDS + c.prior + s.reserve()
                s.leave_out(c, f"too little time left to measure it ({format_seconds(max(s.left(), 0))}); "
                               f"it needs roughly {format_seconds(c.prior)} on two CPU cores, a "
                               f"budget of about {format_seconds(enough)}")
                return False
            scaled = self._scaled(c, head)
            if scaled is None and setup:  # nothing measured to scale from, nor the model to probe
                c.estimate = setup + c.prior
                return True
            if scaled is None:
                self._probe(c, head)
            else:  # sized on a scaled cost; the order decides whether the probe is worth its time
                record, source = scaled[0], f" here ({scaled[1]})"
                one = clone(head).set_params(epochs=1)
                probe += MARGIN * sum(record.fit_seconds(one.fit_work(steps * batch))
                                      for steps in (1, *PROBE_STEPS))
        if not self._sized(c, head, record, probe, room):
            if room:  # it waits for the defaults expected to bring more
                return False
            from ..heads.finetune._sizing import fewest_rows

            self._reached(c.tier)
            enough = s.clock.elapsed() + probe + c.estimate + s.reserve()
            s.leave_out(c, f"one fit needs about {format_seconds(c.estimate)}{source}, "
                           f"{format_seconds(max(s.left(), 0))} were left (nor its cheapest recipe, one "
                           f"epoch on {fewest_rows(head, n):,} rows); a budget of about "
                           f"{format_seconds(enough)} would include the full recipe")
            return False
        if source:
            self._unprobed.add(c.pair)
        return True

    def _sized(self, c: Candidate, head, record: CostRecord, probe: float = 0.0,
               room: float = 0.0) -> bool:
        """Give ``c`` the richest recipe of ``head`` that fits the time left less ``probe`` and
        ``room`` on ``record``'s cost; False (``c.estimate`` the full recipe's) when none does."""
        s, n = self.search, len(self.search.train)

        def cost(work: float) -> float:
            return record.seconds(work, len(s.valid), head.predict_work(len(s.valid)))

        c.recipe, c.estimate = {"head__max_length": int(head.max_length)}, cost(head.fit_work(n))
        sized = head.sized_for(n, s.left() - probe - room - DECIDING, cost)
        if sized is None:
            return False
        params, rows = sized
        c.recipe.update({f"head__{k}": v for k, v in params.items()})
        c.params = {k: v for k, v in c.params.items() if k not in c.recipe}
        c.rows = s.sample_rows(rows) if rows < n else None
        c.estimate = cost(work_of(c.build(), rows)) + probe
        c.share = head.gain_share(params, rows, n, len(s.classes))
        c.least = cost(head.least_work(n)) + probe
        return True

    def _cut(self, c: Candidate) -> None:
        """A variant of a head that sizes itself, too dear on its first's recipe, gets the richest
        recipe of its own settings that fits the time left on no fewer rows than its first (else
        it stays too dear): a second fine-tuned model for the ensemble, at its share of the gain."""
        s, own = self.search, {k[6:]: v for k, v in c.params.items() if k.startswith("head__")}
        before = (c.recipe, c.params, c.rows, c.estimate, c.share)
        if (not self._sized(c, clone(self._head(c)).set_params(**own), s.costs[c.pair])
                or s.n_rows(c) < s.n_rows(c.variant_of)):
            c.recipe, c.params, c.rows, c.estimate, c.share = before

    def _scaled(self, c: Candidate, head):
        """Before ``c``'s head is measured: a cost record scaled from one measured on this device
        by their compute (blocks x width squared; no margin: its probe brings it back before a
        fit), else from the prologue's measured pass (`_from_pass`), and what it was scaled
        from; None when neither is measured. ``head`` takes the measured one's max_length."""
        s = self.search
        donors = [(pair, other) for pair, other in self._heads.items() if pair != c.pair
                  and hasattr(other, "compute") and s.costs[pair].measured]
        if not hasattr(head, "compute"):
            return None
        if not donors:
            return self._from_pass(head)
        pair, other = donors[0]
        if c.pair not in self._heads:
            head.set_params(max_length=int(other.max_length))
        ratio = head.compute() / other.compute()
        record = CostRecord(overhead=s.costs[pair].overhead * ratio / MARGIN,
                            rate=s.costs[pair].rate * ratio / MARGIN)
        return record, f"scaled from {pair[1]}'s measured step by its {ratio:.1f}x compute"

    def _from_pass(self, head):
        """A cost record for ``head`` from the prologue's pass on this device, with no load
        (`rate_from_pass`: it errs cheap, deciding whether a probe is worth its time, never a
        recipe). None before the pass."""
        from ..heads.finetune._sizing import compute, rate_from_pass

        if self.per_doc is None:
            return None
        encoder, rate = REPRESENTATIONS[ENCODER].factory(), self.per_doc / MARGIN
        return (CostRecord(rate=rate_from_pass(head, rate, encoder)), f"the encoder's measured "
                f"pass, {compute(head) / compute(encoder):.1f}x its compute, as a lower bound")

    def _probe(self, c: Candidate, head) -> None:
        """A few training steps of ``head`` on its device: an untimed warm-up, then fits of
        `PROBE_STEPS` steps; their difference is the steps, the rest loading the model."""
        s, batch = self.search, int(head.batch_size)
        one = c.but(recipe={"head__max_length": int(head.max_length), "head__epochs": 1})
        pipe = one.build()
        rng = np.random.default_rng(s.seed)
        n = len(s.train)
        warm, *timed = (rng.choice(n, steps * batch, replace=False) for steps in (1, *PROBE_STEPS))
        record = s.costs[c.pair]
        try:  # the first fit pays one-time costs (imports, kernels): it is not timed
            one.build().fit(s.X_train[warm], s.y_train[warm])
            record.measure_steps(lambda i: one.build().fit(s.X_train[timed[i]], s.y_train[timed[i]]),
                                 tuple(work_of(pipe, len(rows)) for rows in timed))
        except ValueError as err:  # e.g. a class missing from a probe slice: the prior stands
            s.say(f"{s.clock.stamp()} fine-tuning probe: {err}")
            record.observe(work_of(pipe, n), c.prior / 1.25)
            return
        step = record.rate * pipe.steps[-1][1].set_params(epochs=1).fit_work(batch)
        s.say(f"{s.clock.stamp()} fine-tuning probe: {step:.2f} s a step of {batch} at max_length "
              f"{int(head.max_length)} (95% of the documents fit), {record.overhead:.1f} s to load")
