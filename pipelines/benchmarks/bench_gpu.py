"""Encoding and fine-tuning on a GPU: embedkit beside sentence-transformers and Hugging Face's
``Trainer``, every row from one run.

    PYTHONPATH=. python pipelines/benchmarks/bench_gpu.py --device cuda \\
        --output pipelines/benchmarks/results/bench_gpu.md
    PYTHONPATH=. python pipelines/benchmarks/bench_gpu.py --device cpu --quick   # smoke run

Encoding (the packaged all-MiniLM-L6-v2, max_length 256, TREC's 5,952 questions and BBC's
2,225 articles; docs/s, best of ``--rounds`` after a warm-up, rounds interleaved):

* the peer, ``SentenceTransformer.encode`` at batch 32 / 128 / 512, float32 and bfloat16
  weights, and its best batch of each;
* embedkit (``TransformerEmbedder(backend="torch")``, as "auto" resolves on a GPU): its defaults
  (batch settings "auto" for the device), the CPU's 32 texts / 2,048 tokens, 256 / 65,536,
  and ``dtype="bfloat16"`` at the defaults;
* the tokenizer alone (the fast tokenizer over the whole set, truncating at 256) and the
  network alone (pre-tokenized, length-sorted, padded batches already on the device; float32
  and bfloat16), the bounds of what the encode loop can reach.

Each embedkit row gives its minimum cosine to the peer's float32 vectors.

Fine-tuning (TREC's 5,452 training questions, accuracy on its 500 test questions; 2 epochs,
batch 32, lr 1e-4, max_length 64; seconds from raw text to a trained model, loading included):

* embedkit ``TransformerClassifier(fine_tune="full")`` with ``precision`` fp32 and bf16, no
  validation split (the recipe the ``Trainer`` rows run);
* the registry's ``finetune-short`` (``fine_tune="last_k", k=6``: embeddings frozen) and the
  same recipe with ``fine_tune="full"``, both as the registry builds them (early stopping on,
  a tenth held out);
* ``Trainer`` over ``AutoModelForSequenceClassification``, fp32 and ``bf16=True``.

A warm-up fit on a slice runs first, so no row pays the device's start-up. ``--quick`` runs
every row on small slices (the test suite runs it on CPU, so the script never rots); its
numbers mean nothing. ``--data DIR`` reads ``trec.parquet`` / ``bbc-news.parquet`` (columns
``text``, ``label``, and ``split`` for TREC) instead of ``embedkit.load_dataset``; ``--model``
takes a sentence-transformers folder instead of the packaged one.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MAX_LENGTH = 256
RECIPE = {"epochs": 2, "batch_size": 32, "lr": 1e-4, "max_length": 64}


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(cos.min())


def _data(args):
    import pandas as pd

    if args.data:
        trec = pd.read_parquet(Path(args.data) / "trec.parquet")
        bbc = pd.read_parquet(Path(args.data) / "bbc-news.parquet")
    else:
        from embedkit import load_dataset

        trec, bbc = load_dataset("trec"), load_dataset("bbc-news")
    train, test = trec[trec.split == "train"], trec[trec.split == "test"]
    encode = {"TREC": trec.text.tolist(), "BBC": bbc.text.tolist()}
    if args.quick:  # a few short texts: bfloat16 is emulated, slowly, on most CPUs
        encode = {"TREC": encode["TREC"][:4], "BBC": [t[:300] for t in encode["BBC"][:2]]}
        train = train.groupby("label").head(1)
        test = test.iloc[:6]
    return encode, (train.text.tolist(), train.label.to_numpy()), (test.text.tolist(),
                                                                  test.label.to_numpy())


# -- encoding ---------------------------------------------------------------------------------
def _forward_only(tokenizer, network, texts, device):
    """A callable running only the network (+ mean pooling) over pre-tokenized, length-sorted,
    padded batches already on the device, at the encode loop's batch settings."""
    import torch

    from embedkit._batching import length_sorted_batches
    from embedkit.machine import batch_settings

    ids = tokenizer(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"]
    lengths = np.array([len(x) for x in ids])
    rows, tokens = batch_settings(device)
    batches = []
    for idx in length_sorted_batches(lengths, rows, tokens):
        width = int(lengths[idx].max())
        block = np.zeros((len(idx), width), np.int64)
        for j, i in enumerate(idx):
            block[j, : lengths[i]] = ids[i]
        mask = np.arange(width)[None, :] < lengths[idx][:, None]
        batches.append((torch.from_numpy(block).to(device), torch.from_numpy(mask).to(device)))

    def run():
        with torch.inference_mode():
            for block, mask in batches:
                h = network(input_ids=block, attention_mask=mask.long()).last_hidden_state
                (h.float() * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        _sync(device)

    return run


def encoding(args, texts_by_set: dict, device: str) -> dict:
    import torch
    from sentence_transformers import SentenceTransformer

    from embedkit import TransformerEmbedder
    from embedkit.representations.encoders import load_encoder

    peers = {}
    for precision in ("fp32", "bf16"):
        peer = SentenceTransformer(args.model, device=device)
        peer.max_seq_length = MAX_LENGTH
        if precision == "bf16":
            peer.to(torch.bfloat16)
        peers[precision] = peer
    common = {"model": args.model, "backend": "torch", "device": device,
              "max_length": MAX_LENGTH}
    ours = {
        "embedkit defaults": TransformerEmbedder(**common),
        "embedkit 32 texts / 2,048 tokens (CPU defaults)": TransformerEmbedder(
            **common, batch_size=32, max_tokens_per_batch=2048),
        "embedkit 256 texts / 65,536 tokens": TransformerEmbedder(
            **common, batch_size=256, max_tokens_per_batch=65536),
        "embedkit dtype=bfloat16, defaults": TransformerEmbedder(**common, dtype="bfloat16"),
    }
    for emb in ours.values():
        emb.fit(["x"])
    resolved = ours["embedkit defaults"]
    print(f"embedkit defaults on {device}: batch_size_={resolved.batch_size_}, "
          f"max_tokens_per_batch_={resolved.max_tokens_per_batch_}", flush=True)
    tokenizer, fp32_net, _ = load_encoder(args.model, False, device, "float32")
    _, bf16_net, _ = load_encoder(args.model, False, device, "bfloat16")
    results = {"settings": (resolved.batch_size_, resolved.max_tokens_per_batch_)}
    for name, texts in texts_by_set.items():
        contenders = {}
        for precision, peer in peers.items():
            for b in args.peer_batches:
                contenders[f"sentence-transformers {precision}, batch {b}"] = (
                    lambda t=texts, p=peer, b=b: p.encode(t, batch_size=b, convert_to_numpy=True))
        for label, emb in ours.items():
            contenders[label] = lambda t=texts, e=emb: e.transform(t)
        contenders["tokenizer alone"] = lambda t=texts: tokenizer(
            t, truncation=True, max_length=MAX_LENGTH)
        contenders["network alone, fp32"] = _forward_only(tokenizer, fp32_net, texts, device)
        contenders["network alone, bf16"] = _forward_only(tokenizer, bf16_net, texts, device)
        best = dict.fromkeys(contenders, float("inf"))
        outs = {}
        for label, run in contenders.items():  # warm-up; keeps the vectors to compare
            outs[label] = run()
        for _ in range(args.rounds):
            for label, run in contenders.items():
                _sync(device)
                start = time.perf_counter()
                run()
                _sync(device)
                best[label] = min(best[label], time.perf_counter() - start)
        rates = {label: len(texts) / t for label, t in best.items()}
        ref = {}
        for precision in ("fp32", "bf16"):
            label = max((k for k in rates if k.startswith(f"sentence-transformers {precision}")),
                        key=rates.get)
            ref[precision] = label
        cos = {label: _cosine(outs[label], outs[ref["fp32"]])
               for label in contenders if label.startswith(("sentence", "embedkit"))}
        truncated = ours["embedkit defaults"].n_truncated_
        results[name] = {"n": len(texts), "truncated": truncated, "rates": rates, "cos": cos,
                         "ref": ref}
        print(f"{name}: {len(texts)} texts ({truncated} truncated at {MAX_LENGTH})", flush=True)
        for label, rate in rates.items():
            print(f"  {label:50s} {rate:10.1f} docs/s"
                  + (f"  min cosine {cos[label]:.6f}" if label in cos else ""), flush=True)
    return results


# -- fine-tuning ------------------------------------------------------------------------------
def _embedkit_fit(args, device, train, test, label, **params):
    from embedkit.heads.finetune import TransformerClassifier

    clf = TransformerClassifier(model=args.model, device=device, random_state=0, **params)
    _sync(device)
    start = time.perf_counter()
    clf.fit(*train)
    _sync(device)
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(clf.predict(test[0]) == test[1]))
    per_epoch = [round(float(e["dur"]), 2) for e in clf.history_]
    row = {"seconds": seconds, "accuracy": accuracy, "epochs": per_epoch,
           "precision": clf.precision_}
    print(f"  {label:58s} {seconds:7.1f} s  epochs {per_epoch}  accuracy {accuracy:.3f}",
          flush=True)
    return row


def _trainer_fit(args, device, train, test, label, bf16: bool):
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    from embedkit.storage.hf_folders import quiet_transformers

    classes = np.unique(train[1])
    codes = {c: i for i, c in enumerate(classes)}
    _sync(device)
    start = time.perf_counter()
    with quiet_transformers(), tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        tokenizer = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForSequenceClassification.from_pretrained(args.model,
                                                                   num_labels=len(classes))

        def rows(texts, labels=None):
            enc = tokenizer(texts, truncation=True, max_length=RECIPE["max_length"])
            return [{"input_ids": ids, **({} if labels is None else {"labels": codes[y]})}
                    for ids, y in zip(enc["input_ids"], labels if labels is not None
                                      else [None] * len(texts), strict=True)]

        settings = TrainingArguments(
            output_dir=tmp, num_train_epochs=RECIPE["epochs"], learning_rate=RECIPE["lr"],
            per_device_train_batch_size=RECIPE["batch_size"], per_device_eval_batch_size=64,
            bf16=bf16, use_cpu=device == "cpu", save_strategy="no", eval_strategy="no",
            report_to="none", logging_strategy="no", disable_tqdm=True, seed=0)
        trainer = Trainer(model=model, args=settings, train_dataset=rows(*train),
                          data_collator=DataCollatorWithPadding(tokenizer))
        trainer.train()
        _sync(device)
        seconds = time.perf_counter() - start
        with torch.inference_mode():
            logits = trainer.predict(rows(test[0])).predictions
    accuracy = float(np.mean(classes[np.asarray(logits).argmax(-1)] == test[1]))
    print(f"  {label:58s} {seconds:7.1f} s  accuracy {accuracy:.3f}", flush=True)
    return {"seconds": seconds, "accuracy": accuracy, "epochs": [], "precision":
            "bf16" if bf16 else "fp32"}


def fine_tuning(args, device: str, train, test) -> dict:
    from embedkit.registry import HEADS

    short = HEADS["finetune-short"].factory().get_params()
    registry = {k: short[k] for k in ("fine_tune", "k", "lr", "batch_size", "epochs",
                                      "max_length")}
    warm = (train[0][:256], train[1][:256])
    print("fine-tuning (a warm-up fit first)", flush=True)
    rows = {"warm-up": _embedkit_fit(args, device, warm, test, "warm-up", fine_tune="full",
                                     epochs=1, max_length=RECIPE["max_length"],
                                     early_stopping=False)}
    for precision in ("fp32", "bf16"):
        rows[f"embedkit full fine-tuning, precision={precision}"] = _embedkit_fit(
            args, device, train, test, f"embedkit full, {precision}", fine_tune="full",
            precision=precision, early_stopping=False, **RECIPE)
    # finetune-short and the same recipe fine-tuning every weight, interleaved (A B B A): each
    # row keeps its faster fit, so neither pays for running first
    short = "embedkit registry finetune-short (last_k, k=6), precision=auto"
    full = "embedkit registry recipe with fine_tune='full', precision=auto"
    pair = {short: registry, full: {**registry, "fine_tune": "full"}}
    for label in (short, full, full, short):
        row = _embedkit_fit(args, device, train, test, label.split(", precision")[0],
                            **pair[label])
        if label not in rows or row["seconds"] < rows[label]["seconds"]:
            rows[label] = row
    for bf16 in (False, True):
        rows[f"Trainer, {'bf16' if bf16 else 'fp32'}"] = _trainer_fit(
            args, device, train, test, f"Trainer {'bf16' if bf16 else 'fp32'}", bf16)
    return rows


def profile_steps(args, device: str, train, path: Path) -> None:
    """torch.profiler over one epoch on a slice for full and last_k fine-tuning: the operators
    that take the time, to see where finetune-short differs."""
    from torch.profiler import ProfilerActivity, profile

    from embedkit.heads.finetune import TransformerClassifier

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda")
                                           else [])
    lines = []
    for fine_tune in ("full", "last_k"):
        clf = TransformerClassifier(model=args.model, device=device, fine_tune=fine_tune, k=6,
                                    epochs=1, early_stopping=False, **{
                                        k: v for k, v in RECIPE.items() if k != "epochs"})
        with profile(activities=activities) as prof:
            start = time.perf_counter()
            clf.fit(train[0][:640], train[1][:640])
            _sync(device)
        lines.append(f"== {fine_tune}: {time.perf_counter() - start:.2f} s for "
                     f"{min(640, len(train[0]))} rows")
        for key in ("self_cpu_time_total",) + (("self_device_time_total",)
                                               if len(activities) > 1 else ()):
            try:
                lines.append(prof.key_averages().table(sort_by=key, row_limit=18))
            except Exception as err:  # noqa: BLE001 - diagnostics only
                lines.append(f"({key}: {err})")
    path.write_text("\n".join(lines))


# -- the report -------------------------------------------------------------------------------
def markdown(args, command: str, device_name: str, enc: dict | None, ft: dict | None) -> str:
    import sentence_transformers
    import torch
    import transformers

    out = [f"# embedkit on {device_name}", "",
           f"Written by `{command}`.", "",
           f"torch {torch.__version__}, transformers {transformers.__version__}, "
           f"sentence-transformers {sentence_transformers.__version__}"
           + (" (--quick: small slices, the numbers mean nothing)" if args.quick else "") + ".", ""]
    if enc:
        rows, tokens = enc["settings"]
        sets = [k for k in enc if k != "settings"]
        out += ["## Encoding (docs/s)", "",
                f"all-MiniLM-L6-v2, max_length {MAX_LENGTH}, best of {args.rounds} after a "
                f"warm-up; embedkit's defaults resolved to batch_size_={rows}, "
                f"max_tokens_per_batch_={tokens}. x: against the peer's best batch of the same "
                "precision (bf16 rows: its bf16 best; others: its fp32 best); cosine: minimum "
                "over the documents, to the peer's fp32 vectors.", ""]
        head = "| row | " + " | ".join(f"{s} ({enc[s]['n']:,}) docs/s | x | cosine" for s in sets)
        out += [head + " |", "|---|" + "---:|---:|---:|" * len(sets)]
        labels = list(enc[sets[0]]["rates"])
        best_rows = ["sentence-transformers fp32, best batch", "sentence-transformers bf16, best batch"]
        for label in labels[: 2 * len(args.peer_batches)] + best_rows + labels[2 * len(args.peer_batches):]:
            cells = []
            for s in sets:
                r = enc[s]
                if label in best_rows:
                    precision = label.split()[1].rstrip(",")
                    key = r["ref"][precision]
                    name = key.rsplit(", ", 1)[1]
                    cells += [f"{r['rates'][key]:,.0f} ({name})", "1.00", f"{r['cos'][key]:.6f}"]
                    continue
                bf16 = "bf16" in label or "bfloat16" in label
                ref = r["rates"][r["ref"]["bf16" if bf16 else "fp32"]]
                cos = f"{r['cos'][label]:.6f}" if label in r["cos"] else ""
                cells += [f"{r['rates'][label]:,.0f}", f"{r['rates'][label] / ref:.2f}", cos]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out += ["", "Targets:"]
        for s in sets:
            r = enc[s]
            ours, peer = r["rates"]["embedkit defaults"], r["rates"][r["ref"]["fp32"]]
            bf, peer_bf = (r["rates"]["embedkit dtype=bfloat16, defaults"],
                           r["rates"][r["ref"]["bf16"]])
            forward = r["rates"]["network alone, fp32"]
            out.append(f"- {s}: defaults {ours / peer:.2f}x the peer's best fp32 (target >= 2.0), "
                       f"cosine {r['cos']['embedkit defaults']:.6f} (>= 0.9999); bf16 "
                       f"{bf / peer_bf:.2f}x the peer's best bf16, cosine "
                       f"{r['cos']['embedkit dtype=bfloat16, defaults']:.6f} (>= 0.999); "
                       f"defaults at {ours / forward:.0%} of the network-alone rate")
        out.append("")
    if ft:
        ft = dict(ft)
        warm = ft.pop("warm-up")
        trainer = {k: v for k, v in ft.items() if k.startswith("Trainer")}
        fastest = min(trainer, key=lambda k: trainer[k]["seconds"])
        out += ["## Fine-tuning TREC", "",
                f"{RECIPE['epochs']} epochs, batch {RECIPE['batch_size']}, lr {RECIPE['lr']}, "
                f"max_length {RECIPE['max_length']}; seconds from raw text to a trained model "
                "(loading and tokenizing included), accuracy on the test questions; x: "
                f"against {fastest} (the Trainer's faster precision). The registry rows run as "
                "the registry builds them (early stopping \"auto\": from 1,000 rows a tenth is "
                "held out and scored each epoch), each the faster of two fits run A B B A. Not in "
                "the table: the first fit of the process (the warm-up, 256 questions, one epoch) took "
                f"{warm['seconds']:.1f} s, start-up of the device included.", "",
                "| row | precision | seconds | s per epoch | accuracy | x |",
                "|---|---|---:|---|---:|---:|"]
        for label, r in ft.items():
            epochs = ", ".join(f"{e:.1f}" for e in r["epochs"])
            out.append(f"| {label} | {r['precision']} | {r['seconds']:.1f} | {epochs} | "
                       f"{r['accuracy']:.3f} | {trainer[fastest]['seconds'] / r['seconds']:.2f} |")
        short = ft["embedkit registry finetune-short (last_k, k=6), precision=auto"]
        full = ft["embedkit registry recipe with fine_tune='full', precision=auto"]
        best_ours = max((v for k, v in ft.items() if k.startswith("embedkit full")),
                        key=lambda v: trainer[fastest]["seconds"] / v["seconds"])
        out += ["", "Targets:",
                f"- fine-tuning: {trainer[fastest]['seconds'] / best_ours['seconds']:.2f}x "
                f"{fastest} (target >= 1.3), accuracy {best_ours['accuracy']:.3f} vs "
                f"{trainer[fastest]['accuracy']:.3f} (within 0.005)",
                f"- finetune-short {short['seconds']:.1f} s vs full {full['seconds']:.1f} s "
                "(target: no slower)", ""]
    return "\n".join(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="auto, cuda, cpu, ...")
    parser.add_argument("--quick", action="store_true", help="small slices (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-batches", default="32,128,512")
    parser.add_argument("--model", default=None, help="sentence-transformers model folder")
    parser.add_argument("--data", default=None, help="folder of trec.parquet, bbc-news.parquet")
    parser.add_argument("--parts", default="encode,finetune", help="encode, finetune or both")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--profile", default=None, help="write a fine-tuning profile here")
    parser.add_argument("--output", default=None, help="write the Markdown table here")
    args = parser.parse_args(argv)
    args.peer_batches = [int(b) for b in args.peer_batches.split(",")]
    if args.quick:
        args.rounds = min(args.rounds, 1)

    from embedkit.machine import Threads

    with Threads(args.threads):  # restored after: a caller's (a test's) threads stay its own
        _run(args, argv)


def _run(args, argv) -> None:
    import torch

    from embedkit.machine import resolve_device

    if args.model is None:
        from embedkit.storage.resources import resource_path

        args.model = str(resource_path("all-minilm-l6-v2"))
    device = resolve_device(args.device)
    device_name = (torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda")
                   else f"{device} ({platform.processor() or platform.machine()}, "
                        f"{torch.get_num_threads()} torch threads)")
    print(f"device: {device_name}", flush=True)
    command = "python pipelines/benchmarks/bench_gpu.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    texts, train, test = _data(args)
    parts = set(args.parts.split(","))
    started = time.perf_counter()

    def write(enc, ft) -> str:  # after each part, so a run cut short keeps what it measured
        report = markdown(args, command.strip(), device_name, enc, ft)
        if args.output:
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            Path(args.output).write_text(report + "\n")
        return report

    enc = encoding(args, texts, device) if "encode" in parts else None
    write(enc, None)
    ft = fine_tuning(args, device, train, test) if "finetune" in parts else None
    report = write(enc, ft)
    print("\n" + report)
    print(f"\ntotal {time.perf_counter() - started:.0f} s", flush=True)
    if args.profile:
        with contextlib.suppress(Exception):
            profile_steps(args, device, train, Path(args.profile))


if __name__ == "__main__":
    main()
