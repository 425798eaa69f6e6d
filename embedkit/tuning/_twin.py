"""Whether a table's other columns earn what they cost (`embedkit.tuning._schedule`).

On a table, every model reads every column with a role. For most tiers that costs little, but
fine-tuning reads the columns joined into one text: longer sequences, fewer rows trained in the
same time. So a table search first fits its first sparse pair's default twice, in the
prologue (seconds): on the table, and on the first text column alone (the *twin*, a model of
the search like any other). Fine-tuning reads the table only where the default on it is ahead
of its twin beyond their noise on the validation rows; otherwise it reads that column alone, as
the search on that column would. Where either was left out, it reads the table.
"""

from __future__ import annotations

from ..data.columns import ColumnRoles
from ..registry import HEADS, REPRESENTATIONS
from ._candidate import Candidate, settle
from ._value import TRAINING_TIERS

__all__ = ["Twin"]

SPARSE = "sparse + linear"  # the tier whose first default gets a twin: the cheapest to fit twice
READERS = TRAINING_TIERS  # the tiers that read the text alone unless the other columns help


class Twin:
    """The text-alone twin of a table search's first sparse default, and what it says."""

    def __init__(self, search, defaults: list[Candidate]):
        roles = search.data.roles
        self.search, self.table, self.twin, self.verdict = search, None, None, None
        if roles is None or not roles.text or roles.columns == roles.text[:1]:
            return
        self.table = next((c for c in defaults if c.tier == SPARSE and not any(
            entry.setup for entry in (REPRESENTATIONS[c.representation], HEADS[c.head]))), None)
        if self.table is None:
            return
        column = roles.text[0]
        self.twin = self.table.but(roles=ColumnRoles(text=(column,)), alone=str(column))

    def prologue(self) -> list[Candidate]:
        """The table's default and its twin, to run first on the cores (none where the search
        reads no table)."""
        if self.twin is None:
            return []
        for c in (self.table, self.twin):
            settle(c, lane="cores")
        return [self.table, self.twin]

    def apply(self, candidates: list[Candidate]) -> None:
        """Once both are done: where the table's other columns did not help, the fine-tuning
        defaults not started yet read the first text column alone (their sizing on the joined
        text dropped)."""
        if self.twin is None or self._decide() in (None, True):
            return
        for c in candidates:
            if c.tier in READERS and c.status == "waiting" and not c.alone:
                settle(c, roles=self.twin.roles, alone=self.twin.alone)
                self.search.costs[c.pair].forget_head()

    def _decide(self) -> bool | None:
        """True: the table helps (or there is no evidence); None: not known yet."""
        s, table, twin = self.search, self.table, self.twin
        if self.verdict is not None:
            return self.verdict
        if any(c.status in ("waiting", "running") for c in (table, twin)):
            return None
        if table.status != "scored" or twin.status != "scored":
            self.verdict = True  # no evidence: the table, as asked
            return self.verdict
        self.verdict = s.board.versus(table, twin).beyond()
        reads = "the table" if self.verdict else f"{twin.alone} alone"
        s.say(f"{s.time.stamp()} columns: {table.label} {table.score:.3f} on the table, "
              f"{twin.score:.3f} on {twin.alone} alone: "
              + ("ahead beyond noise" if self.verdict else "not ahead beyond noise")
              + f"; fine-tuning reads {reads}")
        return self.verdict
