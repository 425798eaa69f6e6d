"""The anytime search behind `embedkit.Tuner`: tiers, measured costs, one validation split.

How it spends a budget
----------------------
* **One validation split.** The documents are split once (stratified, seeded) into training
  rows and validation rows; every candidate, every baseline and every ensemble is fitted on the
  same training rows and scored on the same validation rows, so any two scores compare.
* **Tiers, cheapest first.** Tier 1: sparse features with linear heads (TF-IDF, NBSVM). Tier 2:
  the frozen encoder (MiniLM): its pass over every document is paid once, measured on a probe
  batch and cached, then each head on its vectors costs seconds (linear, MLP, stacking with
  NBSVM). Tier 3: fine-tuning, sized to the time left (`embedkit._finetune_plan`). Then the
  time left is filled with more sampled settings of the leading pairs (a fine-tuned leader's
  other learning rate, on the same rows). After every scored model an ensemble is selected
  from all of them. Seeds are not candidates: picking the luckiest of several seeds of one
  recipe on the validation rows flatters it, and averaging seeds reliably helps; the finish
  (`embedkit.Tuner`) refits a fine-tuned pick on every document as the mean of as many seeds
  as the time left pays for, and the fill never spends the time that two of them need.
* **Measured costs.** Before a candidate runs its time is estimated from what this machine did:
  its pair's earlier fits, else a probe fit on a slice of the training rows scaled up (the
  registry's ``cost`` is only a prior, to skip the probe for what is surely cheap). A candidate
  whose estimate does not fit in the time left (minus what the finish needs) is left out, and
  the leaderboard says which budget would have included it.
* **Anytime.** The best model so far is always known; ``KeyboardInterrupt`` ends the search
  there and the finish (refit or not, saving) goes on.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ._budget import Clock, format_seconds
from .registry import HEADS, REPRESENTATIONS

__all__ = ["FINETUNE_HEADS", "Candidate", "Search", "candidate_label", "describe"]

#: a probe fits on this share of the training rows, between these bounds; where that is over
#: a third of the rows the candidate simply runs (small data is quick)
PROBE_SHARE, PROBE_ROWS = 0.1, (100, 400)
#: estimates from probes and from earlier fits of a pair are multiplied by this margin
MARGIN = 1.25
#: seconds to load the frozen encoder cold (importing torch and transformers, reading the
#: weights), CPU time on 2 cores: it is not started where that much is not left
ENCODER_LOAD = 8.0
TIER_NAMES = {0: "baselines", 1: "sparse + linear", 2: "frozen encoder", 3: "fine-tuning",
              4: "ensembles"}


#: how a fine-tuning plan's label ends (`embedkit._finetune_plan`)
PLANNED = re.compile(r", seed (\d+)\)$")


def describe(params: dict) -> str:
    """``a=1, b=2``: a candidate's settings as the leaderboard prints them."""
    return ", ".join(f"{k.split('__', 1)[-1]}={v}" for k, v in params.items())


def candidate_label(representation: str, head: str, params: dict) -> str:
    """``representation + head (settings)``: a candidate's leaderboard name."""
    text = f"{representation} + {head}" if representation != "passthrough" else head
    return f"{text} ({describe(params)})" if params else text


@dataclass(eq=False)
class Candidate:
    """One model of the search: how to build it, and what happened to it."""

    label: str
    tier: int
    build: Callable[[], Any]
    representation: str = ""
    head: str = ""
    params: dict = field(default_factory=dict)
    kind: str = "candidate"
    prior: float = 0.0
    status: str = "waiting"
    estimate: float = math.nan
    score: float = math.nan
    fit_seconds: float = math.nan
    predict_seconds: float = math.nan
    model: Any = None
    proba: Any = None
    note: str = ""
    weights: dict = field(default_factory=dict)
    rows: Any = None  # the training rows it fits on, when a plan took a subsample

    @property
    def pair(self) -> str:
        return f"{self.representation} + {self.head}"


#: heads that fine-tune a Transformer: tier 3, and ``finetune=False`` leaves them out
FINETUNE_HEADS = ("finetune", "finetune-short", "finetune-seeds", "vote-finetune", "setfit")


def tier_of(representation: str, head: str) -> int:
    """1 sparse, 2 frozen encoder (or stacking over it), 3 fine-tuning."""
    if head in FINETUNE_HEADS:
        return 3
    built = REPRESENTATIONS[representation].factory()
    if type(built).__name__ in ("TransformerEmbedder",) or head in ("stack",):
        return 2
    return 1


def _with_cache(step, cache):
    if cache is not None and not isinstance(step, str) and "cache" in step.get_params():
        step.set_params(cache=cache)
    return step


def pipeline_for(representation: str, head: str, params: dict, cache) -> Callable[[], Any]:
    """A factory of the registry pair's Pipeline with ``params`` (``features__x`` / ``head__y``)."""
    def build():
        from sklearn.pipeline import Pipeline

        pipe = Pipeline([("features", _with_cache(REPRESENTATIONS[representation].factory(), cache)),
                         ("head", HEADS[head].factory())])
        return pipe.set_params(**params) if params else pipe
    return build


def sampled_settings(representation: str, head: str, n: int | None, seed: int) -> list[dict]:
    """Up to ``n`` (None: all) settings of the pair's registry ``space`` other than its
    defaults, in a random order."""
    from sklearn.model_selection import ParameterSampler

    rep, hd = REPRESENTATIONS[representation], HEADS[head]
    space = {**{f"features__{k}": list(v) for k, v in rep.space.items()},
             **{f"head__{k}": list(v) for k, v in hd.space.items()}}
    if not space:
        return []
    steps = {"features": rep.factory(), "head": hd.factory()}
    defaults = {k: steps[k.split("__")[0]].get_params()[k.split("__", 1)[1]] for k in space}
    size = math.prod(len(v) for v in space.values())
    out: list[dict] = []
    for draw in ParameterSampler(space, n_iter=size, random_state=seed):
        changed = {k: v for k, v in sorted(draw.items()) if defaults[k] != v}
        if changed and changed not in out:
            out.append(changed)
    return out[:n]


class Search:
    """Runs the tiers within ``clock`` and records every candidate (`Candidate`)."""

    def __init__(self, docs: np.ndarray, y: np.ndarray, *, clock: Clock, pairs, scoring: str,
                 validation: float, finetune, cache, random_state: int,
                 say: Callable[[str], None], finish_reserve: Callable[[], float]):
        self.docs, self.y, self.clock, self.pairs = docs, y, clock, list(pairs)
        self.scoring, self.validation, self.finetune = scoring, validation, finetune
        self.cache, self.seed, self.say = cache, random_state, say
        self.finish_reserve = finish_reserve
        self.candidates: list[Candidate] = []
        self.tiers_reached: list[int] = []
        self.encoder_seconds = math.nan
        self.interrupted = False
        self.filling = False  # True once every tier's defaults are done (`_fill`)
        self.reserved_seeds = 0  # how many of the finish's seeds the fill keeps time for
        self.margin = MARGIN

    # -- the split and scoring ------------------------------------------------------------------
    def split(self) -> None:
        from sklearn.model_selection import train_test_split

        n = len(self.docs)
        n_classes = len(np.unique(self.y))
        size = int(min(max(round(self.validation * n), 2 * n_classes, 20), 2000, n - 2 * n_classes))
        train, valid = train_test_split(np.arange(n), test_size=size, stratify=self.y,
                                        random_state=self.seed)
        self.train, self.valid = np.sort(train), np.sort(valid)
        self.X_train, self.y_train = self.docs[self.train], self.y[self.train]
        self.X_valid, self.y_valid = self.docs[self.valid], self.y[self.valid]
        self.classes = np.unique(self.y)

    def score_proba(self, proba: np.ndarray) -> float:
        """The scorer's value for validation probabilities (columns in ``classes`` order)."""
        from sklearn.metrics import get_scorer

        return float(get_scorer(self.scoring)(_Stored(proba, self.classes),
                                              np.arange(len(self.y_valid)), self.y_valid))

    def sample_rows(self, m: int) -> np.ndarray:
        """``m`` training rows (positions into the training rows), stratified, seeded."""
        return _stratified_rows(self.y_train, m, self.seed)

    def left(self) -> float:
        """Seconds the search may still spend: the budget minus what the finish needs."""
        return self.clock.left() - self.finish_reserve()

    # -- running one candidate ------------------------------------------------------------------
    def fits(self, c: Candidate) -> bool:
        return c.estimate <= self.left()

    def run(self, c: Candidate) -> bool:
        """Fit ``c`` on the training rows, score it on the validation rows; True if scored."""
        began = time.monotonic()
        try:
            rows = slice(None) if c.rows is None else c.rows
            model = c.build().fit(self.X_train[rows], self.y_train[rows])
            fitted = time.monotonic()
            proba = _aligned(model, self.X_valid, self.classes)
        except Exception as err:  # a candidate that breaks leaves the others running
            c.status, c.note = "failed", f"{type(err).__name__}: {err}"[:300]
            c.fit_seconds = time.monotonic() - began
            self.say(f"{self.clock.stamp()} {c.label}: failed ({c.note[:120]})")
            return False
        c.model, c.proba = model, proba
        c.fit_seconds, c.predict_seconds = fitted - began, time.monotonic() - fitted
        c.score, c.status = self.score_proba(proba), "scored"
        self.say(f"{self.clock.stamp()} {TIER_NAMES[c.tier]}: {c.label}: {c.score:.3f} "
                 f"({c.fit_seconds + c.predict_seconds:.1f} s)")
        return True

    def leave_out(self, c: Candidate, why: str = "") -> None:
        c.status = "left out"
        need = self.clock.elapsed() + c.estimate + self.finish_reserve()
        c.note = why or (f"needs about {format_seconds(c.estimate)}, {format_seconds(max(self.left(), 0))} "
                         f"were left; a budget of about {format_seconds(need)} would include it")
        self.say(f"{self.clock.stamp()} left out {c.label}: {c.note}")

    def estimate(self, c: Candidate) -> float:
        """Seconds ``c`` will take: its pair's earlier fits, else a probe on a slice, else the
        registry prior where that is surely small."""
        done = [d for d in self.candidates if d.pair == c.pair and d.status == "scored"
                and d is not c]
        if done:
            return MARGIN * max(d.fit_seconds + d.predict_seconds for d in done)
        if c.prior <= 0.01 * self.clock.budget:
            return c.prior
        return self.probe(c)

    def probe(self, c: Candidate) -> float:
        """Fit ``c`` on a slice of the training rows and scale its time up to all of them."""
        n = len(self.train)
        m = int(min(max(PROBE_SHARE * n, PROBE_ROWS[0]), PROBE_ROWS[1]))
        if 3 * m >= n:
            return c.prior
        rows = self.sample_rows(m)
        began = time.monotonic()
        try:
            model = c.build().fit(self.X_train[rows], self.y_train[rows])
            fit_s = time.monotonic() - began
            began = time.monotonic()
            model.predict_proba(self.X_valid[: min(len(self.X_valid), m)])
            predict_s = (time.monotonic() - began) * len(self.X_valid) / min(len(self.X_valid), m)
        except Exception:  # the full fit will say what is wrong
            return c.prior
        return MARGIN * (fit_s * (n / m) ** 1.1 + predict_s)

    # -- the tiers ------------------------------------------------------------------------------
    def run_tiers(self, baselines: dict[str, Callable[[], Any]]) -> None:
        """Baselines, tier 1, tier 2, tier 3, then fill the time left; ``KeyboardInterrupt``
        stops wherever it comes and keeps what was scored."""
        try:
            self.split()
            wanted = {t: [(r, h) for r, h in self.pairs if tier_of(r, h) == t] for t in (1, 2, 3)}
            self.say(f"{self.clock.stamp()} {len(self.train):,} training rows, "
                     f"{len(self.valid):,} validation rows; tiers: " + ", ".join(
                         f"{TIER_NAMES[t]} ({len(p)} pairs)" for t, p in wanted.items() if p))
            names = list(baselines)
            self.add_and_run(Candidate(label=names[0], tier=0, build=baselines[names[0]],
                                       kind="baseline", representation="plain TF-IDF", head="LR"))
            self.tiers_reached.append(0)
            # the encoder's pass next: the second baseline needs it, and the pick must meet both
            encoded = self._encode(names[1], baselines[names[1]], wanted[2])
            self._defaults(wanted[1], tier=1)
            if encoded:
                self._defaults(wanted[2], tier=2)
            self._finetuning(wanted[3])
            self._fill()
        except KeyboardInterrupt:
            self.interrupted = True
            for c in self.candidates:  # the one being fitted or measured when it came
                if c.status == "waiting":
                    c.status, c.note = "interrupted", "stopped by Ctrl-C (or SIGTERM) before it was scored"
            self.say(f"{self.clock.stamp()} interrupted: finishing with the best model so far")

    def add_and_run(self, c: Candidate) -> bool:
        """Record ``c``, estimate it, run it if it fits (else leave it out), then re-select the
        ensemble."""
        self.candidates.append(c)
        if c.tier and math.isnan(c.estimate):
            c.estimate = self.estimate(c)
        if c.tier and not self.fits(c):
            self.leave_out(c)
            return False
        ok = self.run(c)
        if ok:
            self._update_ensemble()
        return ok

    def _update_ensemble(self) -> None:
        self.candidates = [c for c in self.candidates if c.kind != "ensemble"]
        found = self.ensembles()
        self.candidates.extend(found)
        if found and 4 not in self.tiers_reached:
            self.tiers_reached.append(4)

    def _candidate(self, rep: str, head: str, params: dict, tier: int) -> Candidate:
        prior = (REPRESENTATIONS[rep].cost + HEADS[head].cost) * len(self.train) / 1000
        return Candidate(label=candidate_label(rep, head, params), tier=tier,
                         build=pipeline_for(rep, head, params, self.cache), representation=rep,
                         head=head, params=params, prior=prior)

    def _defaults(self, pairs, tier: int) -> None:
        if not pairs:
            return
        self.tiers_reached.append(tier)
        for rep, head in sorted(pairs, key=lambda p: REPRESENTATIONS[p[0]].cost + HEADS[p[1]].cost):
            self.add_and_run(self._candidate(rep, head, {}, tier))

    def _encode(self, baseline: str, build_baseline, pairs) -> bool:
        """The frozen encoder's pass over every document, once (cached for every model that
        reads it), and the plain MiniLM baseline on its vectors; False when it does not fit."""
        encoder = _with_cache(REPRESENTATIONS["minilm"].factory(), self.cache)
        began = time.monotonic()
        # before paying for the load: the load and half the registry's rough cost of the pass
        need = ENCODER_LOAD + 0.5 * REPRESENTATIONS["minilm"].cost * len(self.docs) / 1000
        if need <= self.left():
            encoder.fit(self.docs[:2])  # loads the model: paid once, not per document
            sample = np.random.default_rng(self.seed).choice(len(self.docs), min(64, len(self.docs)),
                                                           replace=False)
            probe = time.monotonic()
            encoder.transform(self.docs[sample])  # cached: the full pass skips these
            per_doc = (time.monotonic() - probe) / len(sample)
            need = MARGIN * per_doc * (len(self.docs) - len(sample))
        minilm = Candidate(label=baseline, tier=0, build=build_baseline, kind="baseline",
                           representation="plain MiniLM", head="LR", estimate=need)
        if need > self.left():
            enough = self.clock.elapsed() + need + self.finish_reserve() + 30
            for c in [minilm, *(self._candidate(r, h, {}, 2) for r, h in pairs)]:
                self.candidates.append(c)
                c.estimate = need
                self.leave_out(c, f"the encoder's pass over the {len(self.docs):,} documents needs "
                                  f"about {format_seconds(need)}; a budget of about "
                                  f"{format_seconds(enough)} would include it")
            return False
        for start in range(0, len(self.docs), 256):  # chunks: an interrupt loses one at most
            encoder.transform(self.docs[start:start + 256])
        self.encoder_seconds = time.monotonic() - began
        self.say(f"{self.clock.stamp()} frozen encoder: every document encoded once in "
                 f"{self.encoder_seconds:.0f} s (cached for every model that reads it)")
        self.add_and_run(minilm)
        return True

    def _finetuning(self, pairs) -> None:
        if not pairs or self.finetune is False:
            return
        from ._finetune_plan import MIN_PROBE_SECONDS, plan

        self.tiers_reached.append(3)
        for rep, head in pairs:
            if self.left() < MIN_PROBE_SECONDS:  # not the time to import torch, load, measure
                c = self._candidate(rep, head, {}, 3)
                c.estimate = max(MARGIN * c.prior, MIN_PROBE_SECONDS)
                self.candidates.append(c)
                self.leave_out(c)
                continue
            if type(HEADS[head].factory()).__name__ != "TransformerClassifier":
                self.add_and_run(self._candidate(rep, head, {}, 3))  # SetFit...: a probe decides
                continue
            found = plan(self, head, seed=0)
            c = Candidate(label=found.label, tier=3, build=found.build, representation=rep,
                          head=head, params=found.params, estimate=found.estimate, rows=found.rows)
            if not found.fits:
                self.candidates.append(c)
                self.leave_out(c, found.note)
                continue
            self.add_and_run(c)

    def _fill(self) -> None:
        """Spend what is left on the leaders' other settings, best pair first, while one fits
        (``filling`` tells the finish's reserve that the tiers are done)."""
        self.filling = True
        tried: set[str] = {c.label for c in self.candidates}
        while True:
            leaders, seen = [], set()
            for c in sorted((c for c in self.candidates if c.status == "scored" and c.tier in (1, 2, 3)),
                            key=lambda c: -c.score):
                if c.pair not in seen:
                    seen.add(c.pair)
                    leaders.append(c)
            chosen = None
            for lead in leaders:  # best pair first; a pair with nothing left that fits yields
                for params in sampled_settings(lead.representation, lead.head, None, self.seed):
                    option = self._variant(lead, params)
                    if option.label in tried:
                        continue
                    option.estimate = self.estimate(option)
                    if self.fits(option):
                        chosen = option
                        break
                if chosen is not None:
                    break
            if chosen is None:  # every setting of every pair scored, or none fits the time left
                return
            tried.add(chosen.label)
            self.add_and_run(chosen)

    def _variant(self, lead: Candidate, params: dict) -> Candidate:
        """``lead``'s pair with ``params``; a fine-tuning plan's variant keeps the plan's recipe
        (max_length, epochs, blocks) and rows and changes only ``params``."""
        c = self._candidate(lead.representation, lead.head, params, lead.tier)
        plan = next((d for d in self.candidates if d.pair == lead.pair and PLANNED.search(d.label)),
                    None)  # the plan itself comes first: variants are of it, not of each other
        if plan is not None:
            c.build, c.rows = _with_params(plan.build, params), plan.rows
            c.params = {**plan.params, **params}
            c.label = PLANNED.sub(lambda m: f", {describe(params)}, seed {m.group(1)})", plan.label)
        return c

    # -- ensembles --------------------------------------------------------------------------------
    def ensembles(self) -> list[Candidate]:
        """The ensemble of the scored models: Caruana's greedy selection (with replacement) over
        their validation probabilities, its score cross-fitted (chosen on one half of the
        validation rows, scored on the other, and back) so the selection does not flatter it."""
        scored = [c for c in self.candidates if c.status == "scored" and c.kind != "ensemble"]
        if len(scored) < 2:
            return []
        found = []
        halves = _stratified_halves(self.y_valid, self.seed)
        parts = []
        for choose, judge in (halves, halves[::-1]):
            weights = _greedy(scored, choose, self)
            proba = sum(w * c.proba[judge] for c, w in weights.items()) / sum(weights.values())
            parts.append((len(judge), _score_rows(self, proba, judge)))
        weights = _greedy(scored, np.arange(len(self.y_valid)), self)
        if len(weights) >= 2:
            score = sum(k * s for k, s in parts) / sum(k for k, _ in parts)
            found.append(self._ensemble(f"ensemble of {len(weights)} models", weights, score))
        return found

    def _ensemble(self, label: str, weights: dict, score: float) -> Candidate:
        """A weighted vote of scored candidates, with its (cross-fitted) score."""
        total = sum(weights.values())
        proba = sum(w * c.proba for c, w in weights.items()) / total
        return Candidate(label=label, tier=4, build=lambda: None, kind="ensemble",
                         status="scored", score=score, proba=proba,
                         note="; ".join(f"{c.label}: {w / total:.2f}" for c, w in weights.items()),
                         fit_seconds=sum(c.fit_seconds for c in weights),
                         predict_seconds=sum(c.predict_seconds for c in weights),
                         weights={c.label: w / total for c, w in weights.items()})

    def best(self) -> Candidate:
        """The pick: the best validation score; ties go to the quicker model."""
        scored = [c for c in self.candidates if c.status == "scored"]
        return max(scored, key=lambda c: (c.score, -(c.fit_seconds + c.predict_seconds)))


class _Stored(ClassifierMixin, BaseEstimator):
    """A fitted-classifier stand-in that answers with stored probabilities (rows by index), so
    any scikit-learn scorer scores a set of validation probabilities."""

    def __init__(self, proba=None, labels=None):
        self.proba, self.labels = proba, labels

    @property
    def classes_(self):
        return self.labels

    def predict_proba(self, rows):
        return self.proba[np.asarray(rows)]

    def predict(self, rows):
        return self.labels[self.predict_proba(rows).argmax(axis=1)]

    def decision_function(self, rows):
        p = self.predict_proba(rows)
        return p[:, 1] if p.shape[1] == 2 else p


def _with_params(build: Callable[[], Any], params: dict) -> Callable[[], Any]:
    return lambda: build().set_params(**params)


def _aligned(model, X, classes: np.ndarray) -> np.ndarray:
    """``model.predict_proba(X)`` with columns in ``classes`` order (a class the model never saw
    gets probability 0)."""
    proba = np.asarray(model.predict_proba(X), dtype=np.float64)
    seen = list(np.asarray(model.classes_))
    if seen == list(classes):
        return proba
    out = np.zeros((len(X), len(classes)))
    for j, c in enumerate(classes):
        if c in seen:
            out[:, j] = proba[:, seen.index(c)]
    return out


def _score_rows(search: Search, proba: np.ndarray, rows: np.ndarray) -> float:
    from sklearn.metrics import get_scorer

    return float(get_scorer(search.scoring)(_Stored(proba, search.classes), np.arange(len(rows)),
                                            search.y_valid[rows]))


def _greedy(scored: Sequence[Candidate], rows: np.ndarray, search: Search,
            rounds: int = 12) -> dict:
    """Caruana's ensemble selection on ``rows``: add (with replacement) the model that most
    improves the mean's score; stop when nothing improves it. Returns ``{candidate: count}``."""
    counts: dict = {}
    total = None
    best = -math.inf
    for _ in range(rounds):
        trial = []
        for c in scored:
            mean = (c.proba[rows] if total is None else (total + c.proba[rows]))
            trial.append((_score_rows(search, mean / (sum(counts.values()) + 1), rows), c))
        score, pick = max(trial, key=lambda t: (t[0], -t[1].fit_seconds))
        if score <= best:
            break
        best = score
        counts[pick] = counts.get(pick, 0) + 1
        total = pick.proba[rows] if total is None else total + pick.proba[rows]
    return counts


def _stratified_rows(y: np.ndarray, m: int, seed: int) -> np.ndarray:
    from sklearn.model_selection import train_test_split

    if m >= len(y):
        return np.arange(len(y))
    try:
        rows, _ = train_test_split(np.arange(len(y)), train_size=m, stratify=y, random_state=seed)
    except ValueError:  # a class too rare to stratify this small a slice
        rows = np.random.default_rng(seed).choice(len(y), size=m, replace=False)
    return np.sort(rows)


def _stratified_halves(y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import StratifiedKFold

    if np.unique(y, return_counts=True)[1].min() >= 2:
        a, b = next(StratifiedKFold(2, shuffle=True, random_state=seed).split(y, y))
        return a, b
    order = np.random.default_rng(seed).permutation(len(y))  # a class with one validation row
    return np.sort(order[: len(y) // 2]), np.sort(order[len(y) // 2:])
