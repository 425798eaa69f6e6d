"""Dask integration: feature extraction and grid search beyond one machine.

Two tools, built on well-kept libraries (Dask, joblib, pyarrow) rather than a scheduler of our
own:

* `extract_features` turns a ``dask.dataframe`` text column (or a ``dask.bag`` of str) into a
  dask DataFrame of pooled vectors with any *fitted* representation. The model is shipped to
  each worker once (``client.scatter(..., broadcast=True)`` on a distributed cluster, one
  ``dask.delayed`` graph key otherwise), never pickled into every partition's task.
  `write_parquet` stores the result one file per partition, each written to a hidden temporary
  file and renamed into place, so a worker killed mid-task (Dask retries the task elsewhere)
  leaves neither a partial nor a duplicated partition.
* `dask_backend` connects to a scheduler address or starts a ``LocalCluster`` and routes
  joblib (hence ``GridSearchCV(n_jobs=-1)`` and ``cross_validate``) to it.

Both need the ``distributed`` extra (``pip install "embedkit[distributed]"``). To stream a file
larger than memory on one machine, without Dask, use `embedkit.streaming.embed_file`.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .storage.files import atomic_path
from .streaming import encode_frame, keep_columns, output_columns

__all__ = ["dask_backend", "extract_features", "running_client", "write_parquet"]

_PART = "part.{:05d}.parquet"
_SUCCESS = "_SUCCESS.json"


def _require_dask():
    try:
        import dask.dataframe  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"embedkit.distributed needs Dask ({err}); install it with "
            'pip install "embedkit[distributed]".'
        ) from None


# ---------------------------------------------------------------------------------------
# the per-partition function (runs on workers)
# ---------------------------------------------------------------------------------------


def _encode_partition(part, model, column, keep, columns, densify, partition_info=None):
    where = f"partition {partition_info['number']}" if partition_info else "a partition"
    if isinstance(part, pd.Series):
        return encode_frame(part, model, columns, densify, None, where)
    return encode_frame(part[column], model, columns, densify, part[list(keep)], where)


def _one_tuple(doc) -> tuple:
    return (doc,)


def _active_client(client):
    if client is not None:
        return client
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - dask without distributed
        return None
    try:
        return default_client()
    except ValueError:
        return None


def running_client():
    """The running Dask client, or a ValueError that says how to start one (`embedkit.Tuner`
    with ``backend="dask"``)."""
    client = _active_client(None)
    if client is None:
        raise ValueError(
            "Tuner(backend='dask') needs a running Dask client: fit inside `with "
            "embedkit.distributed.dask_backend():` (a local cluster) or `dask_backend("
            "'tcp://host:8786')`, or start `distributed.Client(...)` first; on the command line, "
            "`embedkit tune --dask-workers N` or `--scheduler ADDRESS`.")
    return client


def ship(model, client):
    """One handle on the model per cluster: a broadcast future, or a single delayed key."""
    import dask

    if client is not None:
        return client.scatter(model, broadcast=True, hash=False)
    return dask.delayed(model, name=f"embedkit-model-{uuid.uuid4().hex}")


# ---------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------


def extract_features(representation, data, column: str = "text", *,
                     keep: Sequence[str] | str | None = None, densify: bool = False,
                     as_array: bool = False, client=None):
    """Encode a distributed text collection with a fitted representation, partition by partition.

    Parameters
    ----------
    representation : fitted Representation
        Any fitted embedkit representation with ``output="pooled"`` (or any fitted
        scikit-learn text transformer). Fit it locally on a sample first; it is shipped to
        each worker once (broadcast with ``client.scatter`` on a distributed cluster, a single
        ``dask.delayed`` key on the local schedulers), not pickled into every task. (Dask's
        active memory manager may drop a copy that sits idle before the computation starts;
        that worker then fetches it once more.) Workers call its ``transform``, so its
        ``cache`` setting goes with it: give it a cache folder that every worker can reach to
        share cached embeddings between them.
        When a client is used, compute the result on that client (``client.compute`` or with
        it as the default client), since the model lives on its workers.
    data : dask.dataframe.DataFrame, dask.dataframe.Series or dask.bag.Bag
        The documents: the ``column`` of a dask DataFrame, a dask Series of str, or a bag of str.
    column : str, default="text"
        Text column of a dask DataFrame (and the name used for a bag's documents).
    keep : str or list of str, optional
        DataFrame columns (e.g. an id or label) to carry next to the vectors.
    densify : bool, default=False
        Sparse output (TF-IDF without ``n_components``) is refused by default, because a
        dask DataFrame column is dense; ``True`` converts each partition to a dense frame.
        The better fix is usually ``TfidfEmbedder(n_components=300)`` (dense LSA vectors).
    as_array : bool, default=False
        Return a dask array ``(n_docs, dim)`` float32 instead of a DataFrame (``keep`` is then
        not allowed). Its chunk sizes come from counting the input rows, which reads the input
        once (cheap next to encoding).
    client : distributed.Client, optional
        The client to broadcast the model with; defaults to the current default client, if any.

    Returns
    -------
    dask.dataframe.DataFrame
        The ``keep`` columns, then one float32 column per dimension named by
        ``get_feature_names_out()`` (e.g. ``lsa0 ...``), with the input's index and divisions
        (rows stay aligned with the input). Nothing is computed until you ask
        (``.compute()``, `write_parquet`, ``.persist()``).

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> from embedkit import TfidfEmbedder, load_dataset
    >>> df = load_dataset("trec")
    >>> emb = TfidfEmbedder(n_components=50).fit(df.text)
    >>> ddf = dd.from_pandas(df, npartitions=4)
    >>> feats = extract_features(emb, ddf, "text", keep="label")
    >>> list(feats.columns[:3]), feats.npartitions
    (['label', 'lsa0', 'lsa1'], 4)
    """
    _require_dask()
    import dask.bag as db
    import dask.dataframe as dd

    columns = output_columns(representation, densify)
    keep = keep_columns(keep, column, columns)
    if as_array and keep:
        raise ValueError("as_array=True returns only the vectors; drop keep= or use the DataFrame.")
    client = _active_client(client)
    model = ship(representation, client)
    float_meta = pd.DataFrame({c: pd.Series([], dtype=np.float32) for c in columns})

    if isinstance(data, db.Bag):  # a bag of str becomes a dask Series, partition for partition
        if keep:
            raise ValueError("a dask.bag of str has no other columns to keep; drop keep=.")
        data = data.map(_one_tuple).to_dataframe(
            meta=pd.DataFrame({column: pd.Series([], dtype=object)}))[column]

    if isinstance(data, dd.Series):
        texts, keep = data, []
    elif isinstance(data, dd.DataFrame):
        missing = [c for c in [column, *keep] if c not in data.columns]
        if missing:
            raise ValueError(
                f"the dask DataFrame has no column {missing[0]!r}; its columns are "
                f"{list(data.columns)}. Pass column= (text) and keep= (carried) columns that exist."
            )
        texts = data[column] if not keep else data[[column, *keep]]
    else:
        raise ValueError(
            f"data is a {type(data).__name__}; expected a dask DataFrame (with column "
            f"{column!r}), a dask Series or a dask bag of str. For an in-memory list use "
            "representation.transform(texts); for a file larger than memory use embed_file()."
        )
    meta = float_meta
    if keep:
        meta = pd.concat([data._meta[keep], float_meta], axis=1)
    out = texts.map_partitions(_encode_partition, model, column, keep, columns, densify,
                               meta=meta)
    if as_array:
        counts = data.map_partitions(len)
        counts = client.compute(counts).result() if client is not None else counts.compute()
        lengths = tuple(int(n) for n in counts)
        return out.to_dask_array(lengths=lengths)
    return out




def write_parquet(frame, path, *, overwrite: bool = False, compute: bool = True):
    """Write a dask DataFrame to a folder of parquet files, one per partition, atomically.

    Partition ``i`` is written to a hidden temporary file in ``path`` and renamed to
    ``part.{i:05d}.parquet`` only when complete. A worker killed mid-task leaves at most a
    hidden temporary file (removed at the end), and Dask's retry of the task renames its own
    complete file to the same name, so no partition is lost, partial or duplicated. When every
    partition is in place, ``_SUCCESS.json`` records the row count of each.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        E.g. the output of `extract_features`.
    path : str or Path
        Output folder (local or a filesystem shared by all workers). Readers
        (``pandas.read_parquet``, ``dask.dataframe.read_parquet``, pyarrow) skip the hidden
        and ``_``-prefixed files.
    overwrite : bool, default=False
        Replace the parquet parts of an existing output; without it an existing output is an
        error (a mix of old and new parts would otherwise be read as one dataset).
    compute : bool, default=True
        False returns the delayed write (run it with ``dask.compute``) instead.

    Returns
    -------
    dict
        ``{"path", "partitions", "rows"}`` (rows per partition), or a ``dask.delayed`` object
        producing it when ``compute=False``.

    Examples
    --------
    >>> import tempfile, dask.dataframe as dd
    >>> from embedkit import TfidfEmbedder
    >>> docs = pd.DataFrame({"id": [1, 2, 3, 4], "text": ["a cat", "a dog", "the cat", "dogs"]})
    >>> emb = TfidfEmbedder().fit(docs.text)
    >>> feats = extract_features(emb, dd.from_pandas(docs, npartitions=2), keep="id", densify=True)
    >>> folder = tempfile.mkdtemp()
    >>> write_parquet(feats, folder)["rows"]
    [2, 2]
    >>> pd.read_parquet(folder)["id"].tolist()
    [1, 2, 3, 4]
    """
    _require_dask()
    import dask

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    existing = sorted(folder.glob("part.*.parquet")) + sorted(folder.glob(_SUCCESS))
    if existing:
        if not overwrite:
            raise ValueError(
                f"{folder} already holds {len(existing)} output files (e.g. {existing[0].name}); "
                "pass overwrite=True to replace them or choose an empty folder."
            )
        for f in existing:
            f.unlink()
    _clean_temporaries(folder)
    parts = frame.to_delayed()
    writes = [dask.delayed(_write_part, pure=False)(p, str(folder), i) for i, p in enumerate(parts)]
    done = dask.delayed(_finish, pure=False)(writes, str(folder))
    return done.compute() if compute else done


def _write_part(df: pd.DataFrame, folder: str, number: int) -> int:
    with atomic_path(Path(folder) / _PART.format(number)) as tmp:
        df.to_parquet(tmp, engine="pyarrow")
    return len(df)


def _finish(rows: list[int], folder: str) -> dict:
    _clean_temporaries(Path(folder))
    summary = {"path": folder, "partitions": len(rows), "rows": [int(r) for r in rows]}
    with atomic_path(Path(folder) / _SUCCESS) as tmp:
        tmp.write_text(json.dumps(summary))
    return summary


def _clean_temporaries(folder: Path) -> None:
    for f in folder.glob(".part.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()


# ---------------------------------------------------------------------------------------
# grid search on a cluster
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def dask_backend(scheduler: Any = None, n_workers: int | None = None, *,
                 threads_per_worker: int = 1, **cluster_kwargs):
    """Run joblib work (``GridSearchCV``, ``cross_validate``, ...) on a Dask cluster.

    Inside the block, ``n_jobs`` of scikit-learn estimators means Dask workers: each
    cross-validation fit (pipeline clone, representation fit, head training) is one Dask task,
    so candidates and folds spread across machines. Results are the same as with ``n_jobs=1``
    (every embedkit estimator is seeded and picklable).

    Parameters
    ----------
    scheduler : str, distributed.Client or None, default=None
        A scheduler address such as ``"tcp://10.0.0.5:8786"`` (a cluster started with
        ``dask scheduler`` / ``dask worker``, dask-jobqueue, dask-kubernetes, ...), or an existing
        Client. None starts a ``LocalCluster`` of worker processes on this machine.
    n_workers : int, optional
        Workers of the LocalCluster (default: one per CPU core). Only with ``scheduler=None``.
    threads_per_worker : int, default=1
        Threads per LocalCluster worker. One thread per process keeps torch and the GIL from
        contending; raise it only for thread-friendly work.
    **cluster_kwargs
        Passed to ``distributed.LocalCluster`` (e.g. ``memory_limit="4GB"``).

    Yields
    ------
    distributed.Client

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.pipeline import make_pipeline
    >>> from embedkit import TfidfEmbedder
    >>> texts = ["good film", "great film", "bad film", "awful film"] * 3
    >>> labels = ["pos", "pos", "neg", "neg"] * 3
    >>> pipe = make_pipeline(TfidfEmbedder(), LogisticRegression())
    >>> with dask_backend(n_workers=1) as client:  # or dask_backend("tcp://scheduler:8786")
    ...     search = GridSearchCV(pipe, {"logisticregression__C": [1e-4, 10]}, cv=3,
    ...                           n_jobs=-1).fit(texts, labels)
    >>> float(search.best_score_)
    1.0
    """
    try:
        import joblib
        from distributed import Client, LocalCluster
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"dask_backend needs dask.distributed ({err}); install it with "
                          'pip install "embedkit[distributed]".') from None
    if n_workers is not None and (not isinstance(n_workers, (int, np.integer)) or n_workers < 1):
        raise ValueError(f"n_workers={n_workers!r}; pass a positive number of worker processes.")
    with contextlib.ExitStack() as stack:
        if isinstance(scheduler, Client):
            if n_workers is not None:
                raise ValueError("n_workers only applies when starting a LocalCluster; "
                                 "drop it or pass scheduler=None.")
            client = scheduler
        elif scheduler is None:
            cluster_kwargs.setdefault("dashboard_address", None)
            cluster = stack.enter_context(LocalCluster(
                n_workers=n_workers, processes=True, threads_per_worker=threads_per_worker,
                **cluster_kwargs))
            client = stack.enter_context(Client(cluster))
        elif isinstance(scheduler, str):
            if n_workers is not None:
                raise ValueError(f"n_workers={n_workers} cannot resize the cluster at "
                                 f"{scheduler!r}; drop n_workers or pass scheduler=None.")
            try:
                client = stack.enter_context(Client(scheduler, timeout="20s"))
            except OSError as err:
                raise ValueError(
                    f"could not reach a Dask scheduler at {scheduler!r} ({err}). Check the "
                    "address (tcp://host:8786) and that `dask scheduler` is running, or omit "
                    "it to start a local cluster."
                ) from None
        else:
            raise ValueError(f"scheduler is a {type(scheduler).__name__}; pass an address "
                             "string, a distributed.Client, or None for a local cluster.")
        with joblib.parallel_backend("dask", client=client):
            yield client
