"""The prologue of a search's schedule (`embedkit.tuning._schedule.Schedule`): its queue of first
actions (the plain TF-IDF baseline, on a table the twin's pair, the frozen encoder's load), the
encoder's first pass on what is cheap, the plain MiniLM baseline on the rows it encoded, and what
came of a frozen encoder's pass (what the plans then know of its rate, and what a refit on every
document still has to encode). Where not even the encoder's load or a least pass fits, or the
pass stops, the MiniLM baseline and the frozen pairs are left out, saying why.
"""

from __future__ import annotations

import numpy as np

from .._budget import format_seconds
from ..registry import HEADS, REPRESENTATIONS
from . import _jobs
from ._candidate import Candidate, Job, LeaveOut, Plan, settle
from ._settings import ENCODE_SHARE, ENCODER, ENCODER_LOAD, MARGIN, MIN_ENCODED_ROWS, MIN_ROWS, START_SHARE

__all__ = ["Prologue"]


class Prologue:
    """The prologue's part of a schedule, which holds ``search``, ``plans``, ``defaults``, the
    prologue's ``queue``, the two baselines (``baselines``, the MiniLM one's name ``minilm``) and
    ``first``, the MiniLM baseline on the first pass's rows."""

    def _encoder_job(self) -> Job | list[LeaveOut]:
        """The prologue encoder's load, or, where not even that and a least pass fit, the MiniLM
        baseline and the frozen tier left out."""
        s = self.search
        least = min(len(s.data.docs), len(s.data.valid) + MIN_ENCODED_ROWS)
        rough = ENCODER_LOAD + REPRESENTATIONS[ENCODER].cost * least / 1000
        if rough <= s.time.left():
            return _jobs.load_encoder(s, ENCODER, ENCODER_LOAD)
        why = (f"loading the encoder and a pass over the validation rows and {least - len(s.data.valid):,} "
               f"training rows need about {format_seconds(rough)}")
        return self._encoderless(why, rough, need=rough)

    def _encoderless(self, why: str, estimate: float, **said) -> list[LeaveOut]:
        """The MiniLM baseline and the frozen tier's waiting defaults, each costed at ``estimate``
        seconds, left out for ``why``: the prologue encoder's pass does not fit, or stopped."""
        out = []
        for c in [self._minilm(None), *self._frozen()]:
            settle(c, estimate=estimate)
            out.append(LeaveOut(c, why, **said))
        return out

    def _frozen(self) -> list[Candidate]:
        return [c for c in self.defaults if c.tier == "frozen encoder" and c.status == "waiting"]

    def _minilm(self, rows) -> Candidate:
        return Candidate(name=self.minilm, representation="plain MiniLM", head="LR",
                         tier="baselines", kind="baseline", factory=self.baselines[self.minilm],
                         plan=Plan(rows=rows), cache=self.search.asked.cache, encoder=ENCODER)

    def _first_pass(self, per_doc: float) -> Job | list[LeaveOut]:
        """The prologue encoder's first pass: every document where that takes at most
        `START_SHARE` of the time left, else the validation rows and the training rows that do
        (at least `MIN_ROWS`, never past `ENCODE_SHARE` of the time left, and where not even
        `MIN_ENCODED_ROWS` fit that, none: the MiniLM models are left out); the MiniLM baseline
        and the frozen pairs that read MiniLM start on them (a dearer encoder's pairs start on
        the rows its own pass affords: handed these, frozen mpnet went on thousands of rows
        its pass then took minutes to encode, or was left out as too dear)."""
        s, plans = self.search, self.plans
        plans.per_doc = per_doc
        if "cluster" in s.lanes:  # a worker thread runs one torch thread; this process, all cores
            from ..machine import available_cores

            per_doc *= available_cores() / s.lanes["cluster"].slots
        cost = MARGIN * per_doc
        need, rows = cost * len(s.data.docs), None
        if need > START_SHARE * s.time.left():  # a cheap start of at least MIN_ROWS, within the share
            m = max(int(START_SHARE * s.time.left() / cost) - len(s.data.valid), MIN_ROWS)
            m = min(m, int(ENCODE_SHARE * s.time.left() / cost) - len(s.data.valid), len(s.data.train))
            if m < min(MIN_ENCODED_ROWS, len(s.data.train)):
                # the pass over every document within `ENCODE_SHARE` of what is left then
                enough = (need + s.time.reserve() + 30) / ENCODE_SHARE - s.time.reserve()
                why = (f"the encoder's pass over even {MIN_ENCODED_ROWS} of the {len(s.data.docs):,} "
                       "documents does not fit the time left")
                return self._encoderless(why, need, need=enough, including="all of them")
            rows = None if m >= len(s.data.train) else s.data.sample_rows(m)
        for c in self._frozen():  # those reading this pass's vectors; another encoder's start
            if c.encoder == ENCODER:  # on what its own pass costs (`Plans.start_small`)
                settle(c, rows=rows)
        self.first = self._minilm(rows)
        index = plans.unencoded(self.first)
        return _jobs.encode(s, ENCODER, index, per_doc, cost * len(index))

    def _prologue(self):
        """The prologue's next action or leave-out; None where its item left nothing to run:
        the next one is asked for."""
        item = self.queue.pop(0)
        if item == "encoder":
            item = self._encoder_job()
            if isinstance(item, list):  # not even the encoder's load fits: its models left out
                self.queue[:0] = item[1:]
                return item[0]
            return item
        if isinstance(item, Candidate) and item.kind == "candidate":
            planned = self.plans.estimate(item)
            if not planned:  # a `LeaveOut` where nothing of it fits
                return planned if isinstance(planned, LeaveOut) else None
        return item

    def _passed(self, job: Job, outcome) -> list[LeaveOut]:
        s, plans, rep = self.search, self.plans, job.about
        if isinstance(outcome, BaseException):  # its models' fits then fail and say so
            s.say(f"{s.time.stamp()} frozen encoder: {rep}: failed ({outcome})"[:300])
            plans.encoded.setdefault(rep, np.ones(len(s.data.docs), bool))
            if self.queue and self.queue[0] == "minilm":  # the prologue's own pass: no baseline
                self.queue.pop(0)
                return [LeaveOut(self._minilm(None), f"the encoder's pass stopped: {outcome}"[:300])]
            return []
        done, seconds, index = outcome
        plans.mark_encoded(rep, index[:done])
        left = []
        if done < len(index) and self.queue and self.queue[0] == "minilm":  # rare: it ran slow
            self.queue.pop(0)
            why = (f"the encoder's pass stopped after {done:,} of {len(index):,} documents: the "
                   "rest would not fit the time left")
            left = self._encoderless(why, seconds * len(index) / max(done, 1))
        if rep == ENCODER and done >= 64:  # later estimates scale from the pass's own rate
            plans.per_doc = seconds / done
        elif rep != ENCODER:
            plans.rates[rep] = seconds / max(done, 1)
        what = f"{done:,} of {len(index):,} documents" if done < len(index) else f"{done:,} documents"
        where = f" on the cluster's {len(s.asked.client.nthreads())} workers" if "cluster" in s.lanes else ""
        s.say(f"{s.time.stamp()} frozen encoder: {rep}: {what} encoded once{where} in {seconds:.0f} s "
              "(cached for every model that reads it)" + ("; the rest would not fit the time "
                                                          "left" if done < len(index) else ""))
        if self.queue and self.queue[0] == "minilm":
            self.queue[0] = self.first
        # a refit on every document encodes what this encoder's cache still lacks, at its rate
        rest = len(s.data.docs) - int(plans.encoded[rep].sum())
        for c in [self.first, *self.defaults, *s.board.candidates]:
            if c is not None and c.encoder == rep:
                settle(c, extra_refit=plans.doc_seconds(rep) * rest)
        for o in self.defaults:  # their priors held the pass
            if o.representation == rep:
                settle(o, prior=HEADS[o.head].cost * s.data.fit_rows(
                    len(s.data.train) if o.rows is None else len(o.rows)) / 1000)
        return left
