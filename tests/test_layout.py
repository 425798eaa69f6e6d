"""Tests mirror modules: every public module ``embedkit/.../x.py`` has its own ``tests/test_x.py``."""

from __future__ import annotations

from pathlib import Path

import embedkit

PACKAGE = Path(embedkit.__file__).parent
TESTS = Path(__file__).parent

#: public modules without a test file of their own -> the file that tests them, and why
ELSEWHERE = {
    # one suite parametrized over every sequence architecture (masking, attention weights, seeds,
    # errors): splitting it per module would copy each test four times
    "conv": "test_sequence_heads.py",
    "rnn": "test_sequence_heads.py",
    "attention": "test_sequence_heads.py",
    # experiments are data (a PAIRS list each), run through the registry and `compare -e`
    "course_comparison": "test_registry.py",
    "representations_only": "test_registry.py",
}


def test_every_public_module_has_its_own_test_file():
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if not any(part.startswith("_") for part in parts):  # _private.py, __init__.py, _pkg/
            modules[path.stem] = path.relative_to(PACKAGE.parent).as_posix()
    assert {"tfidf", "mlp", "documents", "cli"} <= set(modules)  # the walk finds the package
    missing = [f"{where} has no tests/test_{name}.py" for name, where in modules.items()
               if name not in ELSEWHERE and not (TESTS / f"test_{name}.py").exists()]
    assert not missing, ("; ".join(missing) + ". Put each module's tests in tests/test_<module>.py, or "
                         "list it in ELSEWHERE (tests/test_layout.py) with the file and the reason.")
    stale = [f"{name} -> {target}" for name, target in ELSEWHERE.items()
             if name not in modules or (TESTS / f"test_{name}.py").exists() or not (TESTS / target).exists()]
    assert not stale, f"ELSEWHERE entries to drop or fix (no such module, own test file, no target): {stale}"
