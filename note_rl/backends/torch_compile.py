"""``train(jit_compile=True)`` on the PyTorch backend: each loss term's step runs its loss through
``torch.compile``; the first step (tracing and compiling the forward and backward graphs) is timed,
and where compiling fails (no C++ compiler, an operation the compiler does not handle) the step
warns once and runs the loss eagerly instead of ending the run."""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .base import TORCH_COMPILE_MODES, StepFn, StepResult, check_jit_compile

__all__ = ["CompiledStep", "is_compile_error", "first_line", "MODES"]

#: ``torch.compile`` modes ``jit_compile`` may name instead of ``True``
MODES = TORCH_COMPILE_MODES


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of ``exc``'s message (its class name when it has none), at most ``limit``
    characters: compiler errors span pages, a fallback warning is one line."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


def is_compile_error(exc: BaseException) -> bool:
    """Whether ``exc`` came from TorchDynamo or Inductor (not from the user's loss itself)."""
    module = type(exc).__module__ or ""
    return module.startswith(("torch._dynamo", "torch._inductor"))


class CompiledStep:
    """A gradient step whose loss is compiled, with an eager twin to fall back on.

    :param build: makes a step function from a loss function (the backend's eager step builder)
    :param loss_fn: the loss term
    :param mode: ``torch.compile``'s mode (``jit_compile="reduce-overhead"``: CUDA graphs on a GPU, as
        LeanRL; ``None``: its default)
    """

    def __init__(self, build: Callable[[Callable[..., Any]], StepFn], loss_fn: Callable[..., Any],
                 mode: str | None = None) -> None:
        if mode is not None:
            check_jit_compile(mode, "torch")
        self.compiled = build(torch.compile(loss_fn, mode=mode))
        self.eager = build(loss_fn)
        self.step: StepFn | None = None
        #: seconds the first (compiling) step took; 0.0 after a fallback, ``None`` before the first step
        self.compile_s: float | None = None
        self.name = getattr(loss_fn, "__qualname__", type(loss_fn).__name__)

    def __call__(self, arrays: Sequence[np.ndarray]) -> StepResult:
        if self.step is not None:
            return self.step(arrays)
        started = time.perf_counter()
        try:
            out = self.compiled(arrays)
        except Exception as exc:  # noqa: BLE001 - only the compiler's own errors fall back
            if not is_compile_error(exc):
                raise
            warnings.warn(f"jit_compile=True: torch.compile of {self.name} failed ({type(exc).__name__}: "
                          f"{first_line(exc)}); it runs eagerly", RuntimeWarning, stacklevel=2)
            self.step, self.compile_s = self.eager, 0.0
            return self.eager(arrays)  # the failed attempt stepped no optimizer: the same batch again
        self.compile_s = time.perf_counter() - started
        self.step = self.compiled
        return out
