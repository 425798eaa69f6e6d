"""What ``embedkit tune`` and ``embedkit predict`` write, and what they never touch.

* **Ownership.** A folder `publish_folder` writes holds ``embedkit-tune.json`` (`MARK`), which
  names every entry written there with its checksum (a file's size and SHA-256; a model
  folder's ``manifest.json`` SHA-256, which covers its files). A folder is written only when
  it is new, empty, or marked so (or holds exactly what an earlier, unmarking tune wrote: the
  five `TUNE_ENTRIES`, ``model`` a model folder); a marked entry changed since it was written
  is the user's again. ``overwrite=True`` (``--overwrite``) lets a folder of the user's receive the entries
  that tune writes (`TUNE_ENTRIES`), replacing only those and keeping every other one. A
  model folder is never an output folder, and nothing is written inside one.
* **Checks before the work.** `check_output_folder` and `check_predictions_file` refuse, before
  a search or a prediction starts, what the write would refuse after it: a file where a folder
  goes (or a folder where a file goes), the input file itself, a folder of the user's, a model
  folder, a folder that cannot be written. Each error names the path, what is there and the fix.
* **One commit point.** `publish_folder` writes the whole folder under a temporary sibling name,
  then swaps it in at once (`embedkit.storage.files.publish`): a kill at any moment leaves the old
  folder or the new one, never a mix. The user's entries in the old folder are carried into the
  new one as hard links (a copy where the file system has none) before the swap, so they stay
  where they were whatever the moment of a kill. Leftovers of a killed run are removed by the
  next one (`embedkit.storage.files.sweep`), unless they hold a file found nowhere else.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["MARK", "TUNE_ENTRIES", "WRITE_RATE", "WRITE_SECONDS", "check_output_folder",
           "check_predictions_file", "publish_folder"]

#: the ownership manifest of an output folder
MARK = "embedkit-tune.json"
FORMAT = "embedkit-tune-output"
#: what `embedkit.Tuner` writes into its output folder
#: (the first five for one target; several: the leaderboard files, the model and ``targets/``,
#: a folder of each target's leaderboard files)
TUNE_ENTRIES = ("leaderboard.csv", "leaderboard.md", "leaderboard.png", "report.html", "model",
                "targets")
#: the least time to keep for writing them: 2-8 s of CPU on 2 cores, most of it laying out the
#: time chart's labels (this module imports nothing heavy: the command reads it first)
WRITE_SECONDS = 8.0
#: bytes a second a fitted network's weights are saved at (safetensors, on two cores, the
#: slower of a cold and a warm save), kept beyond `WRITE_SECONDS` for a fine-tuned model
WRITE_RATE = 300e6
_SHOWN = 6
#: what tune writes into its folder: the leftovers of a killed run are disposable there
_OURS = frozenset({*TUNE_ENTRIES, MARK})


def _refuse(path, what: str, fix: str) -> ValueError:
    return ValueError(f"{path} {what}; nothing was written. {fix}")


def _new_folder_fix(path: Path) -> str:
    name = f"{Path(path).resolve().name or 'embedkit'}-tune"
    return f"Pass a new folder (output={name}; on the command line --output {name})"


def _listing(names: list[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _digest(path: Path) -> dict | None:
    """What `MARK` records of an entry: a file's size and SHA-256, a model folder's manifest
    SHA-256, another folder's SHA-256 of its files' paths and SHA-256s (``targets/``); None for
    a link, or a folder that holds one: such an entry is never the mark's."""
    import hashlib

    from .persist import MANIFEST, is_model_folder
    from .resources import file_sha256

    if path.is_symlink():
        return None
    if path.is_file():
        return {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    if is_model_folder(path):
        return {"model_manifest_sha256": file_sha256(path / MANIFEST)}
    if not path.is_dir():
        return None
    inside = sorted(path.rglob("*"))
    if any(p.is_symlink() for p in inside):
        return None
    tree = hashlib.sha256()
    for p in inside:
        tree.update(f"{p.relative_to(path).as_posix()}\0{file_sha256(p) if p.is_file() else ''}\n".encode())
    return {"tree_sha256": tree.hexdigest()}


def _read_mark(folder: Path) -> dict | None:
    """The entries ``folder``'s `MARK` names, or None when it has no valid one."""
    try:
        mark = json.loads((folder / MARK).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # nested past the stack
        return None
    if not isinstance(mark, dict) or mark.get("format") != FORMAT or \
            not isinstance(mark.get("entries"), dict):
        return None
    return mark["entries"]


def _survey(folder: Path) -> tuple[dict | None, list[str], list[str], list[str]]:
    """``(mark, owned, changed, foreign)``: the entries of ``folder`` that its mark names and
    are unchanged, that it names but changed since, and that it does not name."""
    mark = _read_mark(folder)
    names = sorted(os.listdir(folder))
    if mark is None and set(names) == set(TUNE_ENTRIES[:5]) and _digest(folder / "model"):
        # what an embedkit tune wrote before folders were marked: its five entries, no other
        mark = {name: _digest(folder / name) for name in names}
    owned, changed, foreign = [], [], []
    for name in names:
        if name == MARK:
            continue
        if mark is None or name not in mark:
            foreign.append(name)
        else:
            (owned if _digest(folder / name) == mark[name] else changed).append(name)
    return mark, owned, changed, foreign


def _model_ancestor(path: Path) -> Path | None:
    from .persist import is_model_folder

    return next((p for p in path.parents if is_model_folder(p)), None)


def _check_writable(path: Path) -> None:
    """Create and remove a temporary folder where ``path``'s temporary sibling will go (the
    nearest folder that exists): the real test of a read-only folder or file system."""
    from .files import temporary_name

    where = next(p for p in (path.parent, *path.parent.parents) if p.exists() or p == p.parent)
    if not where.is_dir():
        raise _refuse(path, f"cannot be created: {where} is a file, not a folder",
                      "Pass a path whose folders are folders.")
    probe = temporary_name(where / path.name, "probe")
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as err:
        raise _refuse(path, f"cannot be written: creating a folder in {where} fails "
                      f"({err.strerror})", "Pass a folder you can write to.") from None


def check_output_folder(path, *, overwrite: bool = False, inputs: Iterable = ()) -> None:
    """Refuse, before any work, an output folder that `publish_folder` may not write.

    Parameters
    ----------
    path : str or Path
        The output folder: new, empty, or written by `publish_folder` before.
    overwrite : bool, default=False
        Let a folder of the user's receive the entries tune writes (`TUNE_ENTRIES`), replacing
        only those; every other entry is kept.
    inputs : list of paths, default=()
        The files or folders the work reads: the output is neither one nor inside one.

    Raises
    ------
    ValueError
        The path is a file, a model folder or inside one, the current folder or a folder above
        it (it cannot be swapped), a mount point, read-only, or a folder of the user's (unless
        ``overwrite``); a ``model`` entry of the user's that is not a model folder is refused
        even with ``overwrite``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "notes.txt").write_text("mine")
    >>> check_output_folder(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: ... holds files that embedkit tune did not write (notes.txt); nothing was written...
    """
    from .files import sweep

    path = Path(path)
    target = path.resolve()
    sweep(target, ours=_OURS)  # a folder a killed run left aside is put back first
    for source in inputs:
        source = Path(source).resolve()
        if source == target or (source.is_dir() and source in target.parents):
            raise _refuse(path, f"is {'inside ' if source != target else ''}your input {source}",
                          _new_folder_fix(path) + " beside your data, not in it.")
    model = _model_ancestor(target)
    if model is not None:
        raise _refuse(path, f"is inside the model folder {model}, which must hold only what "
                      "embedkit.save wrote", _new_folder_fix(path) + " outside it.")
    if target.exists():
        _check_existing(path, target, overwrite)
    _check_writable(target)


def _check_existing(path: Path, target: Path, overwrite: bool) -> None:
    from .persist import is_model_folder

    if not target.is_dir():
        raise _refuse(path, "is a file; tune writes a folder there (leaderboard files, "
                      "report.html and the model folder model/)", _new_folder_fix(path) + ".")
    if is_model_folder(target):
        raise _refuse(path, "is an embedkit model folder (a saved model, such as the model/ "
                      "folder of an earlier tune); tune never writes into a model",
                      "Pass the folder above it or a new one (output=NAME; on the command line "
                      f"--output NAME); to predict with this model run `embedkit predict {path} "
                      "FILE`.")
    cwd = Path.cwd().resolve()
    if cwd == target or target in cwd.parents:
        raise _refuse(path, "is the folder you are working in (or holds it); tune replaces its "
                      "output folder at one rename, which cannot be done to the current folder",
                      f"Pass a folder inside it (output={path / 'embedkit-tune'}; on the command "
                      f"line --output {path / 'embedkit-tune'}).")
    if os.path.ismount(target):
        raise _refuse(path, "is a mount point; tune replaces its output folder at one rename",
                      "Pass a folder inside it.")
    if not os.access(target, os.R_OK | os.W_OK | os.X_OK):
        raise _refuse(path, "is read-only for you", "Pass a folder you can write to.")
    mark, _, changed, foreign = _survey(target)
    if foreign and mark is None and not overwrite:
        raise _refuse(path, f"holds files that embedkit tune did not write ({_listing(foreign)})",
                      _new_folder_fix(path) + ", or let tune replace only the files it writes "
                      f"there ({', '.join(TUNE_ENTRIES)}/) and keep the others (overwrite=True; on "
                      "the command line --overwrite).")
    if changed and not overwrite:
        raise _refuse(path, f"holds {_listing(changed)}, written by an earlier tune and changed "
                      "since", "Move your changed files elsewhere, pass a new folder, or replace "
                      "them (overwrite=True; on the command line --overwrite).")
    mine = target / "model"
    if "model" in foreign + changed and not (mine.is_dir() and not mine.is_symlink()
                                             and is_model_folder(mine)):
        raise _refuse(path, "holds model, which is not a model folder tune or embedkit.save "
                      "wrote; tune saves its model there and never replaces what it did not write",
                      _new_folder_fix(path) + ", or move model elsewhere.")
    unreadable = [name for name in foreign if not os.access(target / name, os.R_OK)]
    if unreadable:
        raise _refuse(path, f"holds {_listing(unreadable)}, which you cannot read, so tune cannot "
                      "keep it in the new folder", _new_folder_fix(path) + ".")


def _link_or_copy(source, destination) -> None:
    try:
        os.link(source, destination)
    except OSError:  # no hard links here (another file system, another owner): a copy
        shutil.copy2(source, destination)


def _carry(source: Path, destination: Path) -> None:
    """``source`` (a file, a link or a folder tree) at ``destination`` too, as hard links."""
    if source.is_symlink():
        os.symlink(os.readlink(source), destination)
    elif source.is_dir():
        shutil.copytree(source, destination, symlinks=True, copy_function=_link_or_copy)
    else:
        _link_or_copy(source, destination)


def publish_folder(path, write: Callable[[Path], object], *, overwrite: bool = False,
                   inputs: Iterable = ()) -> Path:
    """Write a folder with ``write(folder)`` and publish it as a whole at ``path``.

    The folder is checked again (`check_output_folder`: it may have changed during the work),
    written under a temporary name next to ``path``, marked (`MARK`), then swapped in with
    one rename (`embedkit.storage.files.publish`); the old folder stays until the swap. Entries
    of the old folder that ``write`` does not replace and the old mark did not write (the
    user's) are carried into the new one as hard links, so they never leave ``path``.

    Parameters
    ----------
    path : str or Path
    write : callable
        Fills the (empty) folder it is given.
    overwrite, inputs
        As `check_output_folder`.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "out"
    >>> _ = publish_folder(out, lambda folder: (folder / "leaderboard.md").write_text("# new"))
    >>> sorted(p.name for p in out.iterdir())
    ['embedkit-tune.json', 'leaderboard.md']
    """
    from .files import publish

    path = Path(path)
    check_output_folder(path, overwrite=overwrite, inputs=inputs)
    target = path.resolve()
    mark, owned, changed, foreign = _survey(target) if target.is_dir() else (None, [], [], [])
    dropped = set(owned)

    def keep_latecomers(old: Path, new: Path) -> None:
        """Entries that appeared in the old folder after it was read move to the new one."""
        for name in os.listdir(old):
            if name != MARK and name not in dropped and not os.path.lexists(new / name):
                os.replace(old / name, new / name)

    def build(tmp: Path) -> None:
        write(tmp)
        entries = {name: _digest(tmp / name) for name in sorted(os.listdir(tmp))}
        dropped.update(set(entries) & set(changed + foreign))  # replaced: overwrite=True said so
        for name in changed + foreign:
            if name not in entries:
                _carry(target / name, tmp / name)
        (tmp / MARK).write_text(json.dumps(
            {"format": FORMAT, "format_version": 1, "written_by": "embedkit tune",
             "entries": {k: v for k, v in entries.items() if v is not None}}, indent=1))
        if target.is_dir():
            shutil.copystat(target, tmp)  # the folder keeps its permissions

    publish(target, build, ours=_OURS, on_replaced=keep_latecomers)
    return path


# -- prediction files ------------------------------------------------------------------------
def _prediction_columns(path: Path, kind: str) -> list[str] | None:
    """The columns of an existing table file, or None where it cannot be read as one."""
    import pandas as pd

    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        if kind == "jsonl":
            first = next(pd.read_json(path, lines=True, chunksize=1))
            return [str(c) for c in first.columns]
        return [str(c) for c in pd.read_csv(path, sep="\t" if kind == "tsv" else ",", nrows=0).columns]
    except Exception:  # noqa: BLE001 - anything unreadable is not a predictions file
        return None


def _written_by_predict(path: Path, kind: str) -> bool:
    """Whether ``path`` has the columns `embedkit.predict_file` writes: an optional id, then
    ``label`` and ``proba_<class>`` columns, or ``prediction``; or, for several targets, each
    target's ``<target>`` and ``<target>_proba_<class>`` columns (at least one target with
    probabilities: a file of names alone could be anyone's); an empty file holds nothing."""
    if path.stat().st_size == 0:
        return True
    columns = _prediction_columns(path, kind)
    if not columns:
        return False
    return any(_predict_wrote(columns[start:]) for start in (0, 1))  # without or with an id


def _predict_wrote(columns: list[str]) -> bool:
    if columns == ["prediction"] or (columns[:1] == ["label"] and len(columns) > 1
                                     and all(c.startswith("proba_") for c in columns[1:])):
        return True
    targets, probabilities = [], 0
    for c in columns:
        if targets and c.startswith(f"{targets[-1]}_proba_"):
            probabilities += 1
        else:
            targets.append(c)
    return len(targets) > 1 and probabilities > 0


def check_predictions_file(output, input, *, overwrite: bool = False) -> None:
    """Refuse, before any prediction, an output file that `embedkit.predict_file` may not write.

    The output may not be the input file, a folder, or inside a model folder; an existing file
    is replaced only when it is one predict wrote (its columns say so: an optional id, then
    ``label`` and ``proba_<class>``, or ``prediction``, or several targets' ``<target>`` and
    ``<target>_proba_<class>``) or when ``overwrite``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "mine.csv").write_text("text\\nhello\\n")
    >>> check_predictions_file(folder / "mine.csv", folder / "mine.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: ... is the input file: the predictions would replace your documents; ...
    """
    from .files import file_format

    output, source = Path(output), Path(input)
    if output.resolve() == source.resolve() or (
            output.exists() and source.exists() and os.path.samefile(output, source)):
        raise _refuse(output, "is the input file: the predictions would replace your documents",
                      f"Pass another output name, e.g. -o {source.stem}.predictions{source.suffix}.")
    if output.is_dir():
        raise _refuse(output, "is a folder; predict writes one file",
                      f"Pass a file name, e.g. -o {output / 'predictions.csv'}.")
    kind = file_format(output)
    model = _model_ancestor(output.resolve())
    if model is not None:
        raise _refuse(output, f"is inside the model folder {model}, which must hold only what "
                      "embedkit.save wrote", "Pass an output file outside it.")
    if output.exists() and not overwrite and not _written_by_predict(output, kind):
        columns = _prediction_columns(output, kind)
        what = f"its columns are {columns}" if columns else "it is not a table predict can read"
        raise _refuse(output, f"exists and is not a predictions file (written by embedkit "
                      f"predict: an id, label, proba_<class> columns, or a target's and its "
                      f"<target>_proba_<class> columns); {what}",
                      "Pass another output name, or replace it (overwrite=True; on the command "
                      "line --overwrite).")
    _check_writable(output.resolve())
