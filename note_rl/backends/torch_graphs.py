"""``train(jit_compile="cudagraph")`` on the PyTorch backend: the whole gradient step (forward,
backward, gradient clipping and the optimizer step) captured as one CUDA graph and replayed, as
LeanRL's ``CudaGraphModule`` does; ``"compile+cudagraph"`` compiles the loss with ``torch.compile``
first and captures the compiled kernels.

Why: on the small networks of RL a GPU step is bound by kernel launches (tens of them per step, each
a few microseconds of Python and driver work); a replayed graph launches them all at once.  What the
capture fixes: the batch's shapes (one graph per shape, :data:`MAX_GRAPHS` at most), and every Python
number the loss reads (gamma, tau, a coefficient): values that change while training must live in
tensors changed in place, as the learning rate does here (it becomes a tensor on the device before
the capture, so schedules and adjusters still reach it), and PPO's clip range and SAC's temperature
do.  Where no CUDA device holds the parameters, or the capture fails (an operation that reads a value
back to the host inside the loss), one warning says so and the step runs without a graph.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .base import TORCH_GRAPH_MODES, StepFn, StepResult
from .torch_compile import first_line, is_compile_error

__all__ = ["GraphedStep", "GRAPH_MODES", "MAX_GRAPHS", "WARMUP"]

#: ``jit_compile`` values that capture the whole step
GRAPH_MODES = TORCH_GRAPH_MODES
#: eager steps run (on a side stream) for each batch shape before its capture: lazy initialisation
#: (optimizer state, cuBLAS workspaces, the compiler's first trace) must not happen inside a graph
WARMUP = 3
#: graphs kept at once (an adjuster that changes the batch size makes a new shape each time)
MAX_GRAPHS = 8

Run = Callable[[Sequence[torch.Tensor]], Any]
Finish = Callable[[Any], StepResult]


def make_capturable(optimizers: Sequence[Any], device: torch.device) -> None:
    """Make each optimizer safe to capture: ``capturable=True``, its step counters on the device and
    its learning rate a device tensor (changed in place by ``set_hparam``, so a replayed graph reads
    the current value)."""
    for opt in optimizers:
        for group in opt.param_groups:
            if "capturable" not in group:
                raise RuntimeError(f"{type(opt).__name__} cannot be captured in a CUDA graph")
            group["capturable"] = True
            if "lr" in group and not isinstance(group["lr"], torch.Tensor):
                group["lr"] = torch.tensor(float(group["lr"]), dtype=torch.float32, device=device)
        for slots in opt.state.values():
            step = slots.get("step")
            if isinstance(step, torch.Tensor) and step.device != device:
                slots["step"] = step.to(device)
            elif isinstance(step, (int, float)):
                slots["step"] = torch.tensor(float(step), dtype=torch.float32, device=device)


class _Graph:
    """One captured step: its static inputs, the graph, and the outputs each replay rewrites."""

    def __init__(self, run: Run, inputs: list[torch.Tensor]) -> None:
        self.inputs = inputs
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = run(self.inputs)

    def __call__(self, arrays: Sequence[np.ndarray]) -> Any:
        for static, a in zip(self.inputs, arrays):
            static.copy_(torch.from_numpy(np.ascontiguousarray(a)), non_blocking=True)
        self.graph.replay()
        return self.outputs


class GraphedStep:
    """A gradient step replayed from CUDA graphs, with an eager twin for warm-up and fallback.

    :param build_run: makes the tensor-level step (tensors on the device in, the step's tensor
        outputs out, nothing read back to the host) from a loss function
    :param finish: turns those outputs into a :class:`StepResult` (the one host read of a step)
    :param loss_fn: the loss term
    :param variables: the parameters the step updates
    :param optimizers: their optimizers
    :param compile: compile the loss with ``torch.compile`` before capturing it
    """

    def __init__(self, build_run: Callable[[Callable[..., Any]], Run], finish: Finish, loss_fn: Callable[..., Any],
                 variables: Sequence[torch.Tensor], optimizers: Sequence[Any], compile: bool = False) -> None:
        self.finish = finish
        self.variables, self.optimizers = list(variables), list(optimizers)
        self.name = getattr(loss_fn, "__qualname__", type(loss_fn).__name__)
        self.mode = "compile+cudagraph" if compile else "cudagraph"
        self.run = build_run(torch.compile(loss_fn) if compile else loss_fn)
        self.eager_run = build_run(loss_fn) if compile else self.run
        self.device = self.variables[0].device if self.variables else torch.device("cpu")
        self.graphs: dict[tuple, _Graph] = {}
        self.seen: dict[tuple, int] = {}
        self.capturable = False
        #: why the step runs without graphs (``None`` while it uses them)
        self.off: str | None = None
        #: seconds the warm-up steps and captures took (compiling included); ``None`` before any
        self.compile_s: float | None = None
        if self.device.type != "cuda" or not torch.cuda.is_available():
            self._turn_off(f"the parameters are on {self.device.type}, CUDA graphs need a CUDA device")
        elif torch.distributed.is_available() and torch.distributed.is_initialized():
            self._turn_off("distributed_training averages gradients between replicas outside any graph")

    def _turn_off(self, why: str) -> None:
        warnings.warn(f'jit_compile="{self.mode}": {why}; {self.name} runs without CUDA graphs',
                      RuntimeWarning, stacklevel=3)
        self.off = why
        self.graphs.clear()

    def _tensors(self, arrays: Sequence[np.ndarray]) -> list[torch.Tensor]:
        return [torch.from_numpy(np.ascontiguousarray(a)).to(self.device, non_blocking=True) for a in arrays]

    def _eager(self, arrays: Sequence[np.ndarray]) -> StepResult:
        return self.finish(self.eager_run(self._tensors(arrays)))

    def __call__(self, arrays: Sequence[np.ndarray]) -> StepResult:
        if self.off is not None:
            return self._eager(arrays)
        key = tuple((a.shape, a.dtype.str) for a in arrays)
        graph = self.graphs.get(key)
        if graph is not None:
            return self.finish(graph(arrays))
        if len(self.graphs) >= MAX_GRAPHS:  # a shape beyond the cap: a plain step, not a first one
            return self._warm_up(arrays)
        started = time.perf_counter()
        out = self._first_steps(key, arrays)
        self.compile_s = (self.compile_s or 0.0) + time.perf_counter() - started
        return out

    def _first_steps(self, key: tuple, arrays: Sequence[np.ndarray]) -> StepResult:
        """A warm-up step on a side stream, or, after :data:`WARMUP` of them, the capture."""
        count = self.seen.get(key, 0)
        if count < WARMUP:
            self.seen[key] = count + 1
            return self._warm_up(arrays)
        generator = torch.cuda.default_generators[self.device.index or 0]
        rng = generator.clone_state()  # a capture that fails mid-way leaves the generator "capturing"
        try:
            if not self.capturable:
                make_capturable(self.optimizers, self.device)
                self.capturable = True
            graph = _Graph(self.run, self._tensors(arrays))
        except Exception as exc:  # noqa: BLE001 - a capture that fails leaves the step to eager
            generator.graphsafe_set_state(rng)  # else every later random draw on the device raises
            self._turn_off(f"capturing the step failed ({type(exc).__name__}: {first_line(exc)})")
            torch.cuda.synchronize(self.device)
            return self._eager(arrays)  # nothing ran inside the failed capture: the batch again
        self.graphs[key] = graph
        graph.graph.replay()  # a capture records, it does not run: this batch's step
        return self.finish(graph.outputs)

    def _warm_up(self, arrays: Sequence[np.ndarray]) -> StepResult:
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            try:
                out = self.finish(self.run(self._tensors(arrays)))
            except Exception as exc:
                if self.run is self.eager_run or not is_compile_error(exc):
                    raise
                warnings.warn(f'jit_compile="{self.mode}": torch.compile of {self.name} failed '
                              f"({type(exc).__name__}: {first_line(exc)}); its graph holds the eager loss",
                              RuntimeWarning, stacklevel=3)
                self.run = self.eager_run
                out = self.finish(self.run(self._tensors(arrays)))
        torch.cuda.current_stream(self.device).wait_stream(stream)
        return out


def graphed(build_run: Callable[[Callable[..., Any]], Run], finish: Finish, loss_fn: Callable[..., Any],
            variables: Sequence[torch.Tensor], optimizers: Sequence[Any], mode: str) -> StepFn:
    """The step for ``jit_compile=mode`` (one of :data:`GRAPH_MODES`)."""
    return GraphedStep(build_run, finish, loss_fn, variables, optimizers, compile=mode == "compile+cudagraph")
