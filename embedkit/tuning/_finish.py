"""The end of a budgeted search: the time it keeps back, the refit of the pick on every document
(a fine-tuned model as the mean of its seeds), and the time to write the output.

`Finish` is given to the engine when the search starts (`embedkit.tuning._engine.Search`): the
engine asks it what to keep back (`Finish.reserve`) whenever it weighs what still fits, and runs
it once the search ends (`Finish.run`). Nothing here calls back into `embedkit.Tuner`.
"""

from __future__ import annotations

import math
import time

from .._budget import DECIDING, Clock, format_seconds
from .._stopping import DeadlineReached, MemoryLimitReached
from ..registry import pair_pipeline
from ..storage.outputs import WRITE_RATE, WRITE_SECONDS
from . import _settings
from ._costs import SizesItself, head_of, work_of
from ._settings import MARGIN, PICK_Z, REFIT_MARGIN, REFIT_SHARE, RESERVED_SEEDS

__all__ = ["Finish", "Finished"]



class Finished:
    """What the finish made: the ``estimator``, whether it was ``refit`` on every document, how
    many ``seeds`` its fine-tuned models average, ``members`` (refit, of how many), whether a
    Ctrl-C ``interrupted`` it, its ``calibration`` (`Finish.calibrate`; None for numbers and
    label sets) and, where the refit restored a recipe the folds had cut (`Finish.restored`),
    the label it was refit as (else "")."""

    def __init__(self, estimator, refit: bool, seeds: int, members: tuple[int, int],
                 interrupted: bool, calibration: dict | None = None, refit_as: str = ""):
        self.estimator, self.refit, self.seeds = estimator, refit, seeds
        self.members, self.interrupted, self.calibration = members, interrupted, calibration
        self.refit_as = refit_as


class Finish:
    """The refit and the write of a search whose output goes to ``output`` (None: not written),
    within a budget of ``budget`` seconds."""

    def __init__(self, output=None, budget: float = math.inf, labels=None):
        # labels: the names of the label-set matrix's columns (label sets only)
        self.output, self.budget, self.labels = output, budget, labels
        self.reserved_seeds = 0  # how many of the refit's seeds the fill keeps time for (`reserve`)

    # -- what it keeps back ---------------------------------------------------------------------
    def write_seconds(self, c=None, copies: int = 1) -> float:
        """Seconds to keep for writing the output: the report's, and ``copies`` of the network
        weights of ``c``'s fine-tuned members (its seeds) at `WRITE_RATE`."""
        weights = 0 if c is None else sum(_weights(m) for m in (list(c.weights) if c.weights else [c]))
        return 0.0 if self.output is None else (
            min(max(WRITE_SECONDS, 0.02 * self.budget), 30.0) + copies * weights / WRITE_RATE)

    def refit_seconds(self, search, c, seeds: int = 1) -> float:
        """Seconds to refit ``c`` (its members worth a refit: `worth`) on all the documents,
        from their pairs' cost records, with ``seeds`` seeds of each fine-tuned member."""
        members = [m for m in (list(c.weights) if c.weights else [c]) if self.worth(search, m)]
        n_all = len(search.data.docs)
        return sum(search.costs[m.pair].seconds(work_of(m.build(), n_all), margin=REFIT_MARGIN)
                   * (seeds if _seeded(m) else 1) + m.extra_refit for m in members)

    def reserve(self, search, filling: bool = False) -> float:
        """What the finish needs: writing the output, and the refit of the leader. While the tiers
        run (``filling`` False; the schedule says when every tier's defaults are done), only a
        refit under a quarter of the budget is kept back (a dearer one would starve them; that
        leader is kept as fitted unless time is left at the end). Once they are done, the fill
        never takes the time of the leader's refit with ``RESERVED_SEEDS`` seeds of a fine-tuned
        model, or one, whichever the time left paid for when one first did (kept from then on:
        a fit that overruns later must not hand the seeds' time to the fill), and the moment
        until the finish decides (`DECIDING`), so a fill stopped at its edge leaves it. A refit
        not worth its time (`worth`) is never kept back: the finish would not run it."""
        scored = search.board.scored()
        if not scored:
            return self.write_seconds()
        write = self.write_seconds(best := search.board.best())
        if not filling:
            need = self.refit_seconds(search, best)
            return write + (need if need <= 0.25 * search.time.budget else 0.0)
        if not self.reserved_seeds:  # while none fits, asked again: a new leader may be cheaper
            self.reserved_seeds = next(
                (seeds for seeds in range(RESERVED_SEEDS, 0, -1)
                 if self.refit_seconds(search, best, seeds) <= search.time.to_deadline() - write), 0)
        if not self.reserved_seeds:
            return write
        return write + DECIDING + self.refit_seconds(search, best, self.reserved_seeds)

    # -- the refit ------------------------------------------------------------------------------
    def run(self, search, pick, clock: Clock, say) -> Finished:
        """The pick as one estimator, refit on every document when the time left pays for it;
        each fine-tuned member then averages as many seeds (up to `MAX_SEEDS`) as the time left
        pays for (under cross-validation a single pick first gets back the recipe its folds cut:
        `restored`). A Ctrl-C keeps what is refit and the other members as fitted."""
        from sklearn.frozen import FrozenEstimator

        members = list(pick.weights.items()) if pick.weights else [(pick, 1.0)]
        scored = [member for member, _ in members]
        fitted = [[(member.label, member.model, math.nan)] for member in scored]
        chosen, left = [], clock.left() - self.write_seconds(pick)
        if not pick.weights:
            members = [(self.restored(search, pick, left - DECIDING), 1.0)]
        for i in sorted(range(len(members)), key=lambda i: -members[i][1]):  # heaviest first
            need = self.refit_seconds(search, members[i][0])
            if not search.board.interrupted and need <= left and self.worth(search, members[i][0]):
                chosen.append(i)
                left -= need
        done, interrupted, why = [], False, {}
        try:
            for i in chosen:
                try:  # stopped where it would take the output's time: kept as fitted
                    limit = clock.left() - self.write_seconds(pick) - DECIDING
                    with search.guard(limit):
                        fitted[i] = [self.refit(search, members[i][0], clock, say, limit)]
                except DeadlineReached:
                    why[i] = "its refit ran past the budget's deadline and was stopped"
                    continue
                except MemoryLimitReached as err:
                    why[i] = f"its refit was {err}"
                    continue
                done.append(i)
            if len(done) == len(members):
                self.more_seeds(search, members, fitted, clock, say)
        except KeyboardInterrupt:
            interrupted = True
            say(f"{clock.stamp()} interrupted: the refit stops here")
        for i in set(range(len(members))) - set(done):
            member = scored[i]
            reason = why.get(i) or (
                f"all {len(search.data.docs):,} documents are {self.added(search, member):.0%} more "
                "rows: too few to be worth a refit" if not self.worth(search, member) else
                "a refit on all the documents needs about "
                f"{format_seconds(self.refit_seconds(search, member))}")
            say(f"{clock.stamp()} kept {member.label} as fitted on its "
                f"{search.data.n_rows(member):,} training rows ({reason})")
        seeds = max(len(models) for models in fitted)
        flat = [(label, model, weight / len(models))  # a member's seeds share its weight
                for models, (_, weight) in zip(fitted, members, strict=True)
                for label, model, _ in models]
        estimator = flat[0][1]
        if search.data.task == "multilabel":  # the members' mean, thresholded, predicting names
            estimator = self._label_sets(search, pick, flat)
        elif len(flat) > 1:
            frozen = tuple((f"m{i}: {label}"[:80], FrozenEstimator(model))
                           for i, (label, model, _) in enumerate(flat))
            if search.data.task == "regression":  # the weighted mean of the members' numbers
                from sklearn.ensemble import VotingRegressor

                ensemble = VotingRegressor(list(frozen), weights=[w for _, _, w in flat])
            else:
                from ..heads.ensemble import EnsembleClassifier

                ensemble = EnsembleClassifier(members=frozen, method="vote",
                                              weights=[w for _, _, w in flat])
            head = ensemble.fit(search.data.docs, search.data.y)  # members are frozen: fit only reads labels
            estimator = pair_pipeline("passthrough", head)
        calibration = None
        if search.data.task == "classification" and pick.proba is not None:
            estimator, calibration = self.calibrate(search, pick, estimator)
            say(f"{clock.stamp()} {calibration['said']}")
        refit_as = (members[0][0].label if not pick.weights and done and members[0][0] is not pick
                    else "")  # a single pick's restored recipe; an ensemble is its members
        return Finished(estimator, len(done) == len(members), seeds, (len(done), len(members)),
                        interrupted, calibration, refit_as)

    @staticmethod
    def restored(search, c, seconds: float):
        """Under cross-validation, ``c`` with the richest recipe of its head (up to its own) that
        one fit on every document pays for in ``seconds`` (its measured cost with the margin a
        first fit carries: this recipe was never fitted, unlike a refit's at `REFIT_MARGIN`),
        where ``c``'s recipe was cut to pay for a fit of every fold (its ``share`` below 1) and
        never grew; else ``c``. The folds were paid for to score it; the refit is one fit."""
        state = search.costs[c.pair]
        head = state.head  # as its plans set it
        if (search.data.folds is None or c.share >= 1 or c.grown_from is not None
                or not isinstance(head, SizesItself) or not state.measured):
            return c
        n = len(search.data.docs)
        sized = head.sized_for(n, seconds - c.extra_refit,
                               lambda work: state.seconds(work))
        if sized is None or sized[1] < n:
            return c
        restored = c.but(recipe={**c.recipe, **{f"head__{k}": v for k, v in sized[0].items()}},
                         share=1.0)
        return restored if work_of(restored.build(), n) > work_of(c.build(), n) else c

    @staticmethod
    def calibrate(search, pick, estimator) -> tuple[object, dict]:
        """The pick with its probabilities calibrated by temperature scaling, where that lowers
        the log-loss of the validation rows each at a temperature fitted on other validation
        rows (`embedkit.heads.calibration.cross_tempered`, five folds) by more than `PICK_Z`
        standard errors of the rows' paired differences, the rule a model beats the baseline
        by; else as it is (a near-perfect model's few errors move nothing measurable). The
        temperature is fitted on the probabilities the pick gave on the validation rows while
        it was fitted on the training rows, and applied to the estimator as refit: its last
        step becomes a `TemperatureScaled` of itself, so every prediction, and the accuracy,
        are unchanged. After the temperature, the top class's confidence is mapped as well
        (``top_label``) where, cross-fitted the same way, that lowers the calibration error and
        does not raise the log-loss by more than `PICK_Z` standard errors. Returns the
        estimator and what was measured: ``log_loss`` / ``ece`` as fitted and
        ``log_loss_calibrated`` / ``ece_calibrated`` cross-fitted, the ``temperature`` (1.0
        where not applied), ``applied``, ``top_label``, ``proba`` and
        ``proba_calibrated`` (the two sets of validation probabilities) and a sentence,
        ``said``."""
        import copy

        import numpy as np
        from sklearn.pipeline import Pipeline

        from ..data.targets import expected_calibration_error, log_loss
        from ..heads.calibration import TemperatureScaled, cross_tempered

        proba, y, classes = np.asarray(pick.proba), search.data.y_valid, search.data.classes
        codes = np.searchsorted(classes, y)  # classes: the sorted labels of every row
        tempered = cross_tempered(proba, codes, random_state=search.data.seed)
        gain, noise = _lower_log_loss(tempered, proba, codes)
        out = {"log_loss": log_loss(y, proba, classes),
               "ece": expected_calibration_error(y, proba, classes),
               "log_loss_calibrated": log_loss(y, tempered, classes),
               "ece_calibrated": expected_calibration_error(y, tempered, classes),
               "temperature": 1.0, "applied": False, "top_label": False, "proba": proba,
               "proba_calibrated": tempered}
        last = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
        same = list(np.asarray(last.classes_)) == list(classes)
        if not same or not gain > PICK_Z * noise:
            out["said"] = ("kept the pick's probabilities as they are: " + (
                "it was fitted on rows that lack a class" if not same else
                "a temperature fitted on other validation rows does not lower their log-loss "
                f"beyond its noise ({out['log_loss']:.3f} as fitted, "
                f"{out['log_loss_calibrated']:.3f} tempered, ± {noise:.3f})"))
            return estimator, out
        # then the top class's confidence mapped, where that lowers the calibration error
        # without raising the log-loss beyond its noise (both cross-fitted)
        mapped = cross_tempered(proba, codes, random_state=search.data.seed,
                                top_label=search.data.task != "multilabel")
        change, spread = _lower_log_loss(mapped, tempered, codes)
        ece_mapped = expected_calibration_error(y, mapped, classes)
        top = ece_mapped < out["ece_calibrated"] and change >= -PICK_Z * spread
        scaled = TemperatureScaled(last, top_label=top).fit_held_out(proba, y)
        top = scaled.top_ is not None
        if top:
            out.update(log_loss_calibrated=log_loss(y, mapped, classes), ece_calibrated=ece_mapped,
                       proba_calibrated=mapped)
        out.update(temperature=scaled.temperature_, applied=True, top_label=top)
        out["said"] = (f"calibrated the pick's probabilities: temperature {scaled.temperature_:.2f}"
                       + (", then its top class's confidence mapped" if top else "")
                       + f"; validation log-loss {out['log_loss']:.3f} -> "
                       f"{out['log_loss_calibrated']:.3f}, calibration error {out['ece']:.3f} -> "
                       f"{out['ece_calibrated']:.3f} (each fold at the calibration of the others)")
        if not isinstance(estimator, Pipeline):
            return scaled, out
        calibrated = copy.copy(estimator)
        calibrated.steps = [*estimator.steps[:-1], (estimator.steps[-1][0], scaled)]
        return calibrated, out

    def _label_sets(self, search, pick, flat):
        """The pick of a label-set search as one estimator: the weighted mean of its members'
        label probabilities (one member: its own), a label predicted above the threshold that
        scored best on the validation rows, the labels named."""
        import numpy as np
        from sklearn.frozen import FrozenEstimator

        from ..heads.ensemble import EnsembleClassifier
        from ._selection import label_set_score

        _, threshold = label_set_score(search.data.scoring, pick.proba, search.data.y_valid)
        names = np.asarray(self.labels if self.labels is not None else range(search.data.y.shape[1]))
        sets = [names[row.astype(bool)].tolist() for row in np.asarray(search.data.y)]
        head = EnsembleClassifier(
            members=tuple((f"m{i}: {label}"[:80], FrozenEstimator(model))
                          for i, (label, model, _) in enumerate(flat)),
            method="vote", weights=[w for _, _, w in flat], threshold=threshold)
        return pair_pipeline("passthrough", head.fit(search.data.docs, sets))

    @staticmethod
    def added(search, member) -> float:
        """The share of rows a refit on every document adds to ``member``'s training rows."""
        return len(search.data.docs) / max(search.data.n_rows(member), 1) - 1

    def worth(self, search, member) -> bool:
        """Whether a refit of ``member`` adds `REFIT_SHARE` of its rows or more."""
        return self.added(search, member) >= REFIT_SHARE

    @staticmethod
    def refit(search, member, clock: Clock, say, seconds: float = math.inf) -> tuple[str, object, float]:
        """``member`` (a candidate, maybe another seed of one) fitted on every document: its
        label, the model and seconds; its pair's cost record learns the time. A head that takes
        ``max_seconds`` (fine-tuning, SetFit) is told to end its training in time for the rest
        of its fit to end within ``seconds`` (`training_seconds`): a slower hour then costs
        training steps, not the refit."""
        began = time.monotonic()
        model = member.build()
        head = head_of(model)
        timed = math.isfinite(seconds) and "max_seconds" in head.get_params(deep=False)
        if timed:
            head.set_params(max_seconds=Finish.training_seconds(search, member, head, seconds))
        model.fit(search.data.docs, search.data.y)
        took, cut = time.monotonic() - began, getattr(head, "out_of_time_", False)
        if timed:  # the limit was this refit's, not the model's: a refit of the saved one has none
            head.set_params(max_seconds=None)
        if not cut:  # a training ended by its time limit did less work than its recipe's
            search.costs[member.pair].observe(work_of(model, len(search.data.docs)), took)
        said = f"; its training stopped in time, after {head.n_steps_} steps" if cut else ""
        say(f"{clock.stamp()} refit {member.label} on all {len(search.data.docs):,} documents "
            f"({took:.0f} s{said})")
        return member.label, model, took

    @staticmethod
    def training_seconds(search, member, head, seconds: float) -> float:
        """The seconds a refit of ``member`` within ``seconds`` leaves its ``head``'s training
        (at least one): what is left once its loading and the pass over the documents it makes
        after its training are paid (`rows_after_training`: SetFit's vectors of every one, none
        for fine-tuning), at its pair's measured rates with their margin; a tenth of them kept
        back where its prediction was never measured."""
        state = search.costs[member.pair]
        if math.isnan(state.predict_rate):
            return max(0.9 * seconds, 1.0)
        after = state.overhead + state.predict_rate * head.rows_after_training(len(search.data.docs))
        return max(seconds - MARGIN * after, 1.0)

    def more_seeds(self, search, members, fitted, clock: Clock, say) -> None:
        """Add seeds to the refit fine-tuned members, round by round, while the next one's
        measured cost fits in the time left (at most `MAX_SEEDS` each); a seed whose refit runs
        past the time left (or the memory limit) is stopped and dropped, and no more are added."""
        seeded = [i for i, (member, _) in enumerate(members) if _seeded(member)]
        while seeded:
            i = min(seeded, key=lambda j: len(fitted[j]))
            member = members[i][0]
            if len(fitted[i]) >= _settings.MAX_SEEDS:
                return
            cost = REFIT_MARGIN * max(seconds for _, _, seconds in fitted[i])
            limit = clock.left() - self.write_seconds(member, len(fitted[i]) + 1)
            if cost > limit:
                return
            seed = member.seed + len(fitted[i])
            try:  # a slower hour: the seed dropped, not the output's time taken
                with search.guard(limit):
                    fitted[i].append(self.refit(search, member.but(seed=seed), clock, say))
            except (DeadlineReached, MemoryLimitReached) as err:
                say(f"{clock.stamp()} dropped seed {seed} of {member.label}: its refit was "
                    f"stopped ({err})")
                return


def _lower_log_loss(new, old, codes) -> tuple[float, float]:
    """How much lower the log-loss of probabilities ``new`` is than that of ``old`` on the rows
    of classes ``codes``: the mean of the rows' paired differences and its standard error (inf
    on fewer than two rows)."""
    import numpy as np

    from ..heads.calibration import EPS

    rows = np.arange(len(codes))
    diff = (np.log(np.clip(new[rows, codes], EPS, 1.0))
            - np.log(np.clip(old[rows, codes], EPS, 1.0)))
    return float(diff.mean()), (float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1
                                else math.inf)


def _weights(c) -> int:
    """Bytes of the network weights ``c``'s fitted model saves (a fine-tuned encoder's, else 0)."""
    module = getattr(getattr(c.model, "steps", [(None, None)])[-1][1], "module_", None)
    return 0 if module is None else sum(p.numel() * p.element_size() for p in module.parameters())


def _seeded(c) -> bool:
    """Whether ``c`` is a fine-tuned model whose seeds the refit averages (an ensemble member)."""
    return c.kind == "candidate" and c.seed is not None
