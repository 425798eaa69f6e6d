"""What every end-to-end tune test checks of the two plain baselines on its board."""

import pandas as pd


def scored_baselines(board: pd.DataFrame, tfidf: str, minilm: str) -> pd.DataFrame:
    """The baselines scored on a tune's ``board``, by pipeline: the plain TF-IDF one always;
    MiniLM's too (maybe on a subsample first), unless the encoder's pass did not fit the test's
    short budget on a busy machine: then it is on the board, left out or stopped, saying why."""
    scored = board[(board["status"] == "scored") & (board["kind"] == "baseline")]
    assert tfidf in set(scored["pipeline"]), board[["pipeline", "status", "note"]]
    rows = board[board["pipeline"].str.startswith(minilm)]
    assert len(rows), board["pipeline"].tolist()
    assert rows["status"].eq("scored").any() or rows["note"].str.contains(
        "would include|deadline").all(), rows[["pipeline", "status", "note"]]
    return scored.set_index("pipeline")
