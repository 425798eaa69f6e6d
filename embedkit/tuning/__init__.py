"""The best pipeline a time budget buys: `Tuner` (``embedkit tune``) and its search.

    tuner = embedkit.Tuner(budget="10m", output="my-tune").fit(texts, labels)
    tuner.predict(["a new document"])      # the pick
    tuner.leaderboard_                     # every model tried, the baselines, what was left out

The package's modules, each one concern (docs/architecture.md): `_tuner` (the estimator),
`_engine` (the search's records, estimates, lanes and ensembles), `_schedule` (what to try and
in which order), `_costs` (one cost record per pair), `_selection` (scoring stored validation
probabilities, the ensemble), `_lanes` (where candidates run), `_leaderboard`.
"""

from ._tuner import (
    DEFAULT_PAIRS,
    MAX_SEEDS,
    MINILM_BASELINE,
    RESERVED_SEEDS,
    TFIDF_BASELINE,
    BudgetError,
    Tuner,
    baseline_pipelines,
    leaderboard,
    least_budget,
    memory_limit,
    parse_budget,
    pipelines,
    rows_to_read,
    tune,
)

__all__ = ["DEFAULT_PAIRS", "MAX_SEEDS", "MINILM_BASELINE", "RESERVED_SEEDS",
           "TFIDF_BASELINE", "BudgetError", "Tuner", "baseline_pipelines", "leaderboard",
           "least_budget", "memory_limit", "parse_budget", "pipelines", "rows_to_read", "tune"]
