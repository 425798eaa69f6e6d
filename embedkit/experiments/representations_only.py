"""Every representation that gives one vector per document, with the same logistic regression.

Holding the classifier fixed isolates what each representation brings.
"""

from embedkit.registry import REPRESENTATIONS, representation_form

PAIRS = [(name, "logreg") for name, entry in REPRESENTATIONS.items()
         if representation_form(entry) == "pooled"]
