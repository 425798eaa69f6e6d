"""What a search was asked for (`Asked`): the pairs it may try, whether fine-tuning may run,
where encoded documents are cached, the lanes' hardware, the memory and the prediction cost it
must keep to, and the pairs that stand as the pick. Fixed before the search starts; the engine
holds it (``Search.asked``), and the schedule, the plans and the finish read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Asked"]


@dataclass(frozen=True)
class Asked:
    """A search's settings: the registry ``pairs`` it may try; ``finetune`` (True, False or
    "auto") whether the pairs that train an encoder may; the embedding ``cache`` (None, "memory"
    or a folder); ``device_lane`` whether an accelerator trains beside the cores; a Dask
    ``client`` whose workers fit the models that need nothing this process holds; ``memory``, the
    bytes this process may hold (None: no limit but the machine's `MEMORY_FLOOR`);
    ``predict_limit``, the seconds a row a model may take to predict (None: any; one above it is
    never picked); ``standing``, the pairs whose best model stands as the pick before the
    baselines (`embedkit.tuning._pick.choose`)."""

    pairs: tuple = ()
    finetune: bool | str = "auto"
    cache: Any = None
    device_lane: bool | None = None
    client: Any = None
    memory: float | None = None
    predict_limit: float | None = None
    standing: tuple = ()
