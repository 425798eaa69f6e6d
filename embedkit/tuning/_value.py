"""What an option of the search is worth: expected points over the baselines, from the tiers'
priors until something of the same kind was measured, and from a model's own measured curve once
it grows (`Worth`, the part of `embedkit.tuning._schedule.Schedule` that values options); the
tiers themselves, declared as data (`TIERS`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..registry import HEADS, REPRESENTATIONS, TRAINS_ENCODER, pair_kind
from ._candidate import Candidate
from ._costs import work_of
from ._settings import CURVE_EXPONENT, FEW_ROWS_A_CLASS, FEW_ROWS_EXPONENT, GENERALISES, GROWTH, VARIANT_SHARE

__all__ = ["TIERS", "TRAINING_TIERS", "Tier", "Worth", "tier_of"]


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
    # its own tier: what classifier fine-tuning scores says little of it (on 16 documents a
    # class it trails frozen MiniLM where SetFit leads it: results/few_labels.md)
    Tier("contrastive tuning", ("contrastive",), gain=2.0, lane="device"),
)
#: the tiers whose models train an encoder (they read the text alone, and load torch): those of
#: the registry's `TRAINS_ENCODER` kinds
TRAINING_TIERS = tuple(t.name for t in TIERS if set(t.kinds) & set(TRAINS_ENCODER))


def tier_of(representation: str, head: str) -> Tier:
    """The tier that holds a registry pair."""
    kind = pair_kind(representation, head)
    return next((t for t in TIERS if kind in t.kinds), TIERS[0])


def _expected(score: float, work_ratio: float, exponent: float) -> float:
    """A score after a fit of ``work_ratio`` times the work: its error shrunk as that ratio to the
    power ``exponent`` (the curve every extrapolation of the search follows)."""
    return 1 - (1 - score) * work_ratio ** -exponent


class Worth:
    """The value of a search's options; a schedule holds ``self.search``, the engine."""

    def gain(self, c: Candidate) -> float:
        """Expected points over the baselines: a grown model's from its measured curve
        (`curve_gain`); a pair's first model its entries' prior (head first, else its tier's),
        or, once another pair of its tier was scored, that pair's measured gain (read at every
        training row, as the baselines are: `at_every_row`) plus the difference of their
        priors; at the share of it a cut recipe keeps; a variant's a share of that."""
        if c.grown_from is not None:
            return self.curve_gain(c)
        gain = self.declared(c)
        s = self.search
        siblings = [o for o in s.board.scored() if o.tier == c.tier and o.kind == "candidate"
                    and o.pair != c.pair and o.variant_of is None]
        baselines = [o.score for o in s.board.scored() if o.kind == "baseline"]
        if c.variant_of is None and siblings and baselines:
            score, o = max(((self.at_every_row(o), o) for o in siblings), key=lambda t: t[0])
            gain = max(100.0 * (score - max(baselines)) + gain - self.declared(o), 0.0)
        gain *= c.share
        return gain if c.variant_of is None else gain * VARIANT_SHARE

    @staticmethod
    def declared(c: Candidate) -> float:
        """A pair's prior gain: its entries' (head first), else its tier's."""
        declared = [e.gain for e in (HEADS[c.head], REPRESENTATIONS[c.representation])
                    if e.gain is not None] if not c.name else []
        return declared[0] if declared else next((t.gain for t in TIERS if t.name == c.tier), 1.0)

    def at_every_row(self, c: Candidate) -> float:
        """What scored ``c`` is expected to score fitted on every training row: its error
        shrinking as the work of a fit to the power `CURVE_EXPONENT`: a first fit on a
        subsample set beside a baseline fitted on every row is not a verdict on its tier."""
        s = self.search
        if c.rows is None or c.score >= 1:
            return c.score
        every = c.but(rows=None)
        ratio = work_of(every.build(), s.data.n_rows(every)) / work_of(c.build(), s.data.n_rows(c))
        return _expected(c.score, max(ratio, 1.0), CURVE_EXPONENT)

    def curve_gain(self, grown: Candidate) -> float:
        """Points the next fit of a model is expected to add to the best single model's score:
        its error shrinks as a power of the work of a fit (its rows, epochs, blocks), with the
        exponent its last two fits measured, else `CURVE_EXPONENT`; above the best's score, or
        above its own where it is the best. A first fit that is one point of a steep curve
        (`uncertain`) is valued over the path its growth would take: each step `GROWTH` times
        the work and the seconds of the last while the time left pays for them, its error
        shrinking with `FEW_ROWS_EXPONENT`; the best points a second of that path promises,
        over this step's seconds."""
        s, last = self.search, grown.grown_from
        work = [work_of(c.build(), s.data.n_rows(c)) for c in (grown, last)]
        before, uncertain = last.grown_from, self.uncertain(last)
        exponent = FEW_ROWS_EXPONENT if uncertain else CURVE_EXPONENT
        if before is not None:
            earlier = work_of(before.build(), s.data.n_rows(before))
            errors = (1 - last.score, 1 - before.score)
            if min(errors) > 0 and work[1] > earlier:
                exponent = float(np.clip(-math.log(errors[0] / errors[1])
                                         / math.log(work[1] / earlier), 0.0, 1.0))
        if work[0] <= work[1] or last.score >= 1:
            return 0.0
        leader = max((c for c in s.board.scored() if c.kind != "ensemble"), key=lambda c: c.score)
        best = max(leader.score, last.score)

        def gain(ratio: float) -> float:
            return 100.0 * max(_expected(last.score, ratio, exponent) - best, 0.0)

        ratio = work[0] / work[1]
        if not uncertain:
            return gain(ratio)
        every = last.but(rows=None)
        most = work_of(every.build(), s.data.n_rows(every)) / work[1]
        first = step = seconds = max(grown.estimate, 0.1)
        rate = gain(ratio) / step
        while ratio < most and seconds + GROWTH * step <= s.time.left():
            ratio, step = min(GROWTH * ratio, most), GROWTH * step
            seconds += step
            rate = max(rate, gain(ratio) / seconds)
        return rate * first

    def uncertain(self, c: Candidate) -> bool:
        """Whether scored ``c`` is one point of a curve too steep to read as a verdict: a first
        fit, on a subsample of fewer than `FEW_ROWS_A_CLASS` rows a class, of a model that trains
        an encoder (classes only: what was measured)."""
        s = self.search
        classes = s.data.classes
        return (c.grown_from is None and c.rows is not None and c.tier in TRAINING_TIERS
                and s.data.task == "classification" and classes is not None
                and len(c.rows) < FEW_ROWS_A_CLASS * len(classes))

    def noise(self, score: float) -> float:
        """One standard error of a score on the validation rows (a binomial one for accuracy)."""
        n = len(self.search.data.valid)
        if self.search.data.scoring == "accuracy":
            return max(math.sqrt(max(score * (1 - score), 0) / n), 0.005)
        return 0.01 * max(abs(score), 1.0)

    def reach(self, pair: tuple) -> float:
        """1 when the pair's best is within one standard error of the leader's score, falling
        to 0 at three: what a variant of it can still change."""
        s = self.search
        singles = [c for c in s.board.scored() if c.kind != "ensemble"]
        leader = max(c.score for c in singles)
        best = max((c.score for c in singles
                    if c.pair == pair or GENERALISES.get(c.name) == pair), default=-math.inf)
        se = self.noise(leader)
        return float(np.clip(1 - (leader - best - se) / (2 * se), 0.0, 1.0))
