"""pipelines/benchmarks/bench_gpu.py on the CPU, on small slices (``--quick``): every row of its
tables comes out, with finite positive numbers, so the GPU benchmark never rots."""

from __future__ import annotations

import re

import pytest

from pipelines.benchmarks import bench_gpu

ENCODE_ROWS = [
    *(f"sentence-transformers {p}, batch {b}" for p in ("fp32", "bf16") for b in (32, 128, 512)),
    "sentence-transformers fp32, best batch", "sentence-transformers bf16, best batch",
    "embedkit defaults", "embedkit 32 texts / 2,048 tokens (CPU defaults)",
    "embedkit 256 texts / 65,536 tokens", "embedkit dtype=bfloat16, defaults",
    "tokenizer alone", "network alone, fp32", "network alone, bf16",
]
FINETUNE_ROWS = [
    "embedkit full fine-tuning, precision=fp32", "embedkit full fine-tuning, precision=bf16",
    "embedkit registry finetune-short (last_k, k=6), precision=auto",
    "embedkit registry recipe with fine_tune='full', precision=auto",
    "Trainer, fp32", "Trainer, bf16",
]


def _number(cell: str) -> float:
    return float(cell.split()[0].replace(",", ""))


@pytest.mark.slow
def test_quick_cpu_run_prints_every_row(tmp_path):
    out = tmp_path / "bench_gpu.md"
    bench_gpu.main(["--device", "cpu", "--quick", "--threads", "1", "--output", str(out)])
    text = out.read_text()
    assert "python pipelines/benchmarks/bench_gpu.py --device cpu --quick" in text
    assert text.startswith("# embedkit on cpu")
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| row"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    for label in ENCODE_ROWS:
        cells = rows[label]
        assert len(cells) == 6, label  # TREC and BBC: docs/s, x, cosine
        for rate, ratio in ((cells[0], cells[1]), (cells[3], cells[4])):
            assert _number(rate) > 0 and _number(ratio) > 0, label
        if label.startswith(("sentence", "embedkit")):
            for cosine in (cells[2], cells[5]):
                assert 0.999 <= float(cosine) <= 1.000001, label  # bf16 rows too
    for label in FINETUNE_ROWS:
        precision, seconds, _, accuracy, ratio = rows[label]
        assert precision in ("fp32", "bf16"), label
        assert float(seconds) > 0 and 0 <= float(accuracy) <= 1 and float(ratio) > 0, label
    assert len(re.findall(r"^- (TREC|BBC): defaults", text, flags=re.M)) == 2
    assert "finetune-short" in text.split("Targets:")[-1]
