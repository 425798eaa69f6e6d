"""Every number the budgeted search decides by, named once, with where its value came from.

The manual lists them (docs/tuning-settings.md, generated from this file at each build, with the
few that lower layers own: the moment a decision takes, the time to write the output, the
fine-tuning heads' sizing, the longest document a model reads). A value measured on this
project's benchmarks says which command measured it; a value that is a choice says why.

Decision sets and report sets (issue 46): rules of the search are decided on rotten-tomatoes,
trec, nyt-editorials and bbc-news; disaster-tweets, vader-tweets, election-tweets, sms-spam,
20newsgroups, imdb-reviews and wordnet-glosses are only reported on
(`pipelines/benchmarks/tune_budget.py --datasets ...`; its results file says which is which).
"""

from __future__ import annotations

__all__ = [
    "BASELINE_COST", "CURVE_EXPONENT", "CV_ROWS", "DATA_SHARE", "DEFAULT_PAIRS", "ENCODER", "ENCODER_LOAD",
    "ENCODE_SHARE", "FEW_LABELS", "FEW_LABEL_PAIRS", "FEW_ROWS_A_CLASS", "FEW_ROWS_EXPONENT", "FOLDS",
    "GENERALISES", "GROWTH",
    "LENGTH_SAMPLE", "MARGIN", "MAX_SEEDS", "MEMORY_FLOOR", "MEMORY_SHARE", "MIN_ENCODED_ROWS",
    "MIN_PER_LABEL", "MIN_PROBE_SECONDS", "MIN_ROWS", "PER_DOC_SECONDS", "PICK_BOOTSTRAP",
    "PICK_TOP", "PICK_Z",
    "PREDICT_RATIO", "PROBE_ROWS", "PROBE_SHARE", "PROBE_STEPS", "REFIT_MARGIN", "REFIT_SHARE",
    "RESERVED_SEEDS", "START_SHARE", "VALID_ROWS", "VARIANT_SHARE",
]

# -- what is searched ------------------------------------------------------------------------
#: what `Tuner` searches when no pairs are given: the levers the accuracy suite found
#: (`pipelines/benchmarks/accuracy_suite.py`), by tier: sparse n-grams with linear heads (SGD's
#: cost grows gently with rows and classes; NBSVM as one model per class, `nblr`, whose cost
#: grows with the classes where the `nbsvm` representation's multinomial model grows with their
#: square: `pipelines/benchmarks/bench_linear.py`), the
#: distilled static MiniLM (meaning at TF-IDF's cost where the encoder's pass does not fit),
#: the frozen MiniLM and all-mpnet-base-v2, and both fine-tuned. Stacking NBSVM with MiniLM is
#: left to the ensemble selection, which combines the same models from their validation
#: probabilities instead of refitting them five times
DEFAULT_PAIRS = (
    ("tfidf", "logreg-cv"), ("tfidf", "sgd"), ("ngrams", "nblr"), ("tfidf", "mlp"),
    ("minilm-static", "logreg-cv"), ("minilm-static", "mlp"),
    ("minilm", "logreg-cv"), ("minilm", "mlp"), ("mpnet", "logreg-cv"), ("mpnet", "mlp"),
    ("passthrough", "finetune-short"), ("passthrough", "finetune-mpnet"),
)
#: where the labelled rows are few (at most `FEW_LABELS` a class, the median class; classes, not
#: numbers or label sets): SetFit's MiniLM, tuned on pairs of documents, replaces the classifier
#: fine-tuning pairs of the defaults, and the best-scoring model of these pairs stands as the
#: pick where the better baseline stands elsewhere (`embedkit.tuning._pick.choose`): a choice
#: among a few tens of documents by their cross-validated scores is mostly noise (one draw of
#: sms-spam scored TF-IDF + LR 0.906, SetFit 0.844, MiniLM + LR 0.781 out of fold, and 77.7%,
#: 96%, 91% on new rows: results/few_labels_tune.md), so what stands is what
#: `pipelines/benchmarks/few_labels.py` measured best on its four sets: frozen mpnet + LR (ahead
#: of both baselines at every size of every set, and of SetFit's MiniLM at 8 to 32 a class on the
#: mean of the four, level at 64) and SetFit (ahead of frozen mpnet + LR on some sets: sms-spam
#: at 16, vader-tweets at 32 and 64; results/few_labels.md); of equal scores, the cheaper to fit
#: and predict. Full fine-tuning trails frozen MiniLM + LR at every size of every set. Beyond 64
#: a class it is unmeasured
FEW_LABEL_PAIRS, FEW_LABELS = (("mpnet", "logreg-cv"), ("passthrough", "setfit")), 64
#: the registry pair whose settings generalise a baseline's: when the baseline leads, that
#: pair's variants are within its reach (n-grams, sublinear tf, min_df; C chosen by inner CV)
GENERALISES = {"plain TF-IDF + LR": ("tfidf", "logreg-cv"),
               "plain MiniLM + LR": ("minilm", "logreg-cv")}
#: the representation whose pass over the documents the prologue pays once (and caches): the
#: plain MiniLM baseline's
ENCODER = "minilm"

# -- the split -------------------------------------------------------------------------------
#: the fewest documents of a class (or of a label, for label sets) tune learns from: some for
#: the training rows and some for the validation rows (a choice; fewer is refused for a class
#: and left out, said, for a label)
MIN_PER_LABEL = 3
#: below this many documents no rows are held out: every model is scored on every row by
#: `FOLDS`-fold cross-validation (fitted once a fold, predicting the rows its fold left out),
#: and the pick refit on all of them; no variants are tried (`Schedule.variants`). A fifth of
#: 500 rows is 100, whose accuracy's standard error (4-5 points near 0.75) is larger than what
#: the tiers are expected to bring, and a search picking among tens of models on them picks
#: its noise (on 32 documents the split trained on 12 and picked on 20); fits on so few rows
#: take seconds, five of them too (a choice; label sets keep the split: a fold may lack a
#: label's every row)
CV_ROWS, FOLDS = 500, 5
#: the most validation rows: every model predicts them, so they are part of every model's cost;
#: 2,000 rows give an accuracy near 0.85 a standard error of 0.8 points (a choice)
VALID_ROWS = 2000

# -- costs -----------------------------------------------------------------------------------
#: an estimate is a pair's measured seconds per unit of work (its largest fit's) times this
#: margin: the spread of repeated fits on two busy cores (`pipelines/benchmarks/bench_threads.py`)
MARGIN = 1.25
#: a refit's time is its measured fit scaled to every document (rows^1.1), times this margin
#: (the fits being measured already, only the scaling is uncertain)
REFIT_MARGIN = 1.1
#: the plain TF-IDF baseline's rough cost on 2 CPU cores: seconds per 1,000 documents, plus as
#: much again per 500 characters of the mean document (measured on the seven sets of
#: `tune_budget.py`, where it is dearest a document); with the output's writing time, the least
#: budget that scores anything (`least_budget`) on the rows the first rung fits on
BASELINE_COST = (1.5, 1.0)
#: the search's own seconds a document whatever it fits (the checks, the split, the leaderboard's
#: summary of the data), on two cores: 1,000,000 short texts take about 8 s
PER_DOC_SECONDS = 8e-6
#: a probe fits on this share of the training rows, between these bounds; where that is over
#: a third of the rows the registry's prior stands (small data is quick)
PROBE_SHARE, PROBE_ROWS = 0.1, (100, 400)
#: seconds below which a fine-tuning head is not even measured (importing torch and loading a
#: model take 5-10 s on two cores)
MIN_PROBE_SECONDS = 15.0
#: training steps of the two timed probe fits of a head that sizes itself: their difference is
#: the cost of four steps, the rest loading the model (`CostRecord.measure_steps`)
PROBE_STEPS = (2, 6)
#: a fine-tuning head's max_length is the 95th percentile of the word pieces of this many
#: training documents (a stratified sample): tokenizing 1,000,000 short texts took 40 s
LENGTH_SAMPLE = 5000
#: seconds to load the frozen encoder cold (importing torch and transformers, reading the
#: weights; CPU time on 2 cores, `pipelines/benchmarks/bench_encode.py`)
ENCODER_LOAD = 8.0

# -- memory: a budget like time --------------------------------------------------------------
#: without a limit given, the search may grow its process by this share of the memory free
#: when it starts (the machine's, or what a container's limit leaves): the rest is for the
#: system and what else runs
MEMORY_SHARE = 0.9
#: the documents a file holds may take at most this share of what the limit leaves when tune
#: starts (as read, `embedkit.data.sizes.READ_MEMORY`); a file that needs more is read as a
#: random sample of the rows that fit it (`rows_to_read`): the rest of the limit is for the
#: models, their features and an encoder's batches (a choice: a refit of TF-IDF + LR on every
#: row holds about as much again as its rows)
DATA_SHARE = 0.25
#: bytes: a fit is stopped as over the limit where the machine (or container) has less than
#: this left free, whatever the limit: another program took the memory, and the next
#: allocation would call the system's out-of-memory killer, which loses the whole search
MEMORY_FLOOR = 256 * 2**20

# -- growth: every model starts on what is cheap and grows on its measured curve ----------------
#: a model's first fit takes at most this share of the time left: where its full fit costs more,
#: it starts on the stratified subsample of training rows that fits the share (at least
#: `MIN_ROWS`), and grows from there (a choice: successive halving's first rung)
START_SHARE = 0.1
#: each fit of a model that grows has this many times the rows of its last (successive
#: halving's and FLAML's sample-size factor is 2-4; 3 wastes at most half a fit on regrowing)
GROWTH = 3
#: before a model's second fit, its error is expected to shrink as the work of a fit (rows,
#: epochs, blocks trained) to this power: ten times the work takes a fifth off it. Measured on
#: the decision sets' models that grew in the first 10-minute runs of the rebuilt search
#: (a21b764): median 0.06, mean 0.12 over 11 steps, fine-tuned MiniLM 0.09 (rotten-tomatoes,
#: 3,360 rows one epoch to every row two epochs); after two fits, a model measures its own
CURVE_EXPONENT = 0.1
#: a first fit of a model that trains an encoder on fewer training rows a class than this is one
#: point of a curve that still rises steeply: not a verdict on the pair. Fine-tuned MiniLM's
#: error fell with exponents 0.42 to 0.87 between fits of 22 and 500 rows a class, 0.23 to 0.24
#: from 150-200 to 450-600, and 0.09 from 1,680 (`results/finetune_curve.md`; rotten-tomatoes)
FEW_ROWS_A_CLASS = 300
#: such a first fit's growth is valued over the steps the time left affords (each `GROWTH` times
#: the work of the last), its error expected to shrink with this exponent until its second fit
#: measures its own: below every exponent measured from under 200 rows a class, above those
#: measured from 450 (the curve flattens along the path)
FEW_ROWS_EXPONENT = 0.3
#: the fewest training rows a model starts on, or a default that does not fit on all of them
#: is cut to (fewer rows of a short-text set are too noisy to extrapolate a curve from)
MIN_ROWS = 1000
#: the share of the time left the encoder's pass may take; beyond it the pass covers the
#: validation rows and a subsample of the training rows (at least this many), which the frozen
#: tier's models fit on, and the pass grows with them
ENCODE_SHARE, MIN_ENCODED_ROWS = 0.5, 200
#: a variant is expected to bring this share of its tier's gain
VARIANT_SHARE = 0.25

# -- the pick and the finish ------------------------------------------------------------------
#: a model replaces the better baseline as the pick only when its paired advantage on the
#: validation rows exceeds this many standard errors (issue 46: one)
PICK_Z = 1.0
#: of the models that beat the baseline beyond their noise, one within the noise of the best
#: that predicts this many times faster is picked instead (the cheaper of the close ones)
PREDICT_RATIO = 2.0
#: scorers other than accuracy are compared on this many paired bootstrap draws of the
#: validation rows, for the best this many models (accuracy: every model, exactly)
PICK_BOOTSTRAP, PICK_TOP = 100, 5
#: a refit on every document is worth its time only where it adds this share of rows to the
#: training rows (at 200,000 documents the 2,000 validation rows add 1%: nothing measurable)
REFIT_SHARE = 0.05
#: the refit of a fine-tuned pick averages up to this many seeds (each one more fit, and one
#: more model to store and to run at prediction); the fill keeps back the time of this many.
#: Averaging beat one seed on five of six short-text sets of the accuracy suite
MAX_SEEDS, RESERVED_SEEDS = 4, 2
