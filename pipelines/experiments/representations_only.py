"""Every representation that gives one vector per document, with the same logistic regression.

Holding the classifier fixed isolates what each representation brings.
"""

from ..grids import REPRESENTATIONS

PAIRS = [(name, "logreg") for name, entry in REPRESENTATIONS.items() if "pooled" in entry.forms]
