"""GPU placement of trials (``tuner.gpus_per_trial``).

Each trial process sees only its GPU(s): the driver picks them and the trial sets
``CUDA_VISIBLE_DEVICES`` in its own environment before any framework touches CUDA
(:func:`tuner.run.trial_worker.main`), so ``backend.device=auto`` (or ``cuda``) is that GPU.  A
fraction shares one GPU: ``0.25`` puts four trials on each GPU, each capped at a quarter of its
memory where the framework allows it (PyTorch: ``torch.cuda.set_per_process_memory_fraction``;
TensorFlow has no fraction, its trials allocate on demand: ``TF_FORCE_GPU_ALLOW_GROWTH``).

Trials go round-robin over the visible GPUs, each to the least loaded one counting this driver's
running trials, so a GPU is never given more than its share while another has room.  Which GPUs
are visible: ``NOTE_TUNE_GPUS`` (a comma-separated list of ids: pin a study to some GPUs, or give
tests a fake list), else ``CUDA_VISIBLE_DEVICES`` when it is set, else what ``nvidia-smi`` lists.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..common.errors import ConfigError

__all__ = ["visible_gpus", "GpuPlacer", "Placement", "check_gpus_per_trial", "ENV"]

ENV = "NOTE_TUNE_GPUS"


def visible_gpus(env: dict[str, str] | None = None) -> list[str]:
    """The ids of the GPUs trials may use (see the module docstring); ``[]`` when there is none."""
    env = os.environ if env is None else env
    for key in (ENV, "CUDA_VISIBLE_DEVICES"):
        value = env.get(key)
        if value is not None:
            ids = [x.strip() for x in value.split(",") if x.strip()]
            # CUDA's own convention: an invalid id hides it and every id after it ("-1": no GPU)
            return [] if not ids or ids[0].startswith("-") else ids
    return _nvidia_smi()


def _nvidia_smi() -> list[str]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip().isdigit()] if out.returncode == 0 else []


def check_gpus_per_trial(value: float | None) -> str | None:
    """Why ``tuner.gpus_per_trial`` is refused (``None``: accepted)."""
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        return f"tuner.gpus_per_trial: must be > 0 (0.25 puts four trials on one GPU), got {value}"
    if value > 1 and value != int(value):
        return f"tuner.gpus_per_trial: above 1 it must be a whole number of GPUs, got {value}"
    return None


@dataclass(frozen=True)
class Placement:
    """Where one trial runs: ``visible`` is its ``CUDA_VISIBLE_DEVICES``; ``fraction`` the share of
    that GPU's memory it may use (``None``: whole GPUs)."""

    visible: str
    fraction: float | None

    @property
    def ids(self) -> list[str]:
        return self.visible.split(",")


class GpuPlacer:
    """Chooses each trial's GPUs among ``ids`` (``per_trial`` GPUs each, a fraction shares one).

    :param ids: the visible GPU ids (:func:`visible_gpus`); empty is refused
    :param per_trial: ``tuner.gpus_per_trial``
    :param start: where the round-robin starts (drivers of one study on one machine start apart)
    """

    def __init__(self, ids: Sequence[str], per_trial: float, start: int = 0) -> None:
        if not ids:
            raise ConfigError(f"tuner.gpus_per_trial: {per_trial:g} GPU per trial asked, but no GPU is visible "
                              f"here (nvidia-smi lists none and neither {ENV} nor CUDA_VISIBLE_DEVICES names one); "
                              f"leave tuner.gpus_per_trial unset to train on the CPU")
        if per_trial > len(ids):
            raise ConfigError(f"tuner.gpus_per_trial: {per_trial:g} GPUs per trial asked, but only {len(ids)} "
                              f"visible ({','.join(ids)})")
        self.ids, self.per_trial, self.next = list(ids), float(per_trial), int(start)

    @property
    def capacity(self) -> int:
        """Trials that fit at once without sharing beyond ``per_trial``."""
        if self.per_trial < 1:
            return len(self.ids) * int(math.floor(1 / self.per_trial + 1e-9))
        return len(self.ids) // int(self.per_trial)

    def place(self, running: Iterable[Placement | None] = ()) -> Placement:
        """The next trial's placement, given the placements of this driver's running trials."""
        load = {g: 0.0 for g in self.ids}
        for p in running:
            if p is None:
                continue
            share = p.fraction if p.fraction is not None else 1.0
            for g in p.ids:
                if g in load:
                    load[g] += share
        n = len(self.ids)
        order = [self.ids[(self.next + i) % n] for i in range(n)]  # round-robin from the next one
        self.next += 1
        if self.per_trial < 1:
            best = min(order, key=lambda g: load[g])  # min keeps the first of equals: the round-robin
            return Placement(best, self.per_trial)
        k = int(self.per_trial)
        chosen = sorted(order, key=lambda g: load[g])[:k]  # stable: ties in round-robin order
        return Placement(",".join(chosen), None)
