"""A trial's seeds trained in turns (``tuner.seed_order=interleaved``).

Trained one after another, a trial's seeds give the pruner one seed's learning curve at a time: a
trial is judged on seed 0 alone until seed 0 ends, however its other seeds would have gone.  In turns,
every seed of the trial trains up to its first intermediate report, then every seed up to its second,
and so on; after each round the trial reports the seeds' scores combined as its objective combines
them (``tuner.aggregation``), so the pruner reads the curve of the trial's aggregate objective and a
pruned trial stops all its seeds at once.

Each seed trains in a process of its own, forked from the trial process before the trial trains
anything (``spawn`` for TensorFlow, which is not fork-safe once imported), so a seed's run is the run
it would be alone: nothing global (random generators, framework state, a wandb run) is shared.  Only
one of them runs at a time: the trial process hands the turn on after each report, so the trial uses
the cores a sequential trial would.  The seed processes are in the trial's process group (the driver
kills them with it) and are waited for, so the trial's CPU time counts theirs.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from typing import Any, Callable

from note_rl.backends import backend_info

from ..common.messages import Decision, Report, TrialSpec

__all__ = ["train_in_turns", "seed_context", "SeedFailed", "RoundReport"]

# (pipe to the trial process, the trial's spec, seed index) -> the seed's result summary; runs in the
# seed's own process, and reports through the pipe (each report waits for the seed's next turn)
SeedTrainer = Callable[[Any, TrialSpec, int], dict[str, Any]]


class SeedFailed(RuntimeError):
    """A seed's process raised or ended without a result; the message names the seed."""


def seed_context(backend: str) -> Any:
    """``fork`` where the backend's trials come from a forkserver (the framework is imported but has
    run nothing yet in the trial process), else ``spawn``."""
    fork = backend_info(backend).start_method == "forkserver" and "fork" in mp.get_all_start_methods()
    return mp.get_context("fork" if fork else "spawn")


def _seed_main(conn: Any, spec: TrialSpec, index: int, trainer: SeedTrainer) -> None:
    """A seed process: wait for the first turn, train (each report waits for the next turn), send the
    summary, or the error as ``("error", line, traceback)``."""
    try:
        conn.recv()  # the first turn: round 0 never prunes, so it is always a go
        conn.send(("done", trainer(conn, spec, index)))
    except BaseException as exc:  # noqa: BLE001 - the trial process reports it as the trial's failure
        line = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        try:
            conn.send(("error", line, traceback.format_exc()))
        except OSError:
            pass
        raise SystemExit(1) from None


# (round, {seed index: its score this round}) -> True: prune every seed at its next report
RoundReport = Callable[[int, dict[int, float]], bool]


def train_in_turns(spec: TrialSpec, trainer: SeedTrainer, on_round: RoundReport) -> tuple[list[dict[str, Any]], bool]:
    """Train every seed of ``spec`` in turns; after each round, ``on_round(round, scores)`` with the
    round's score of each seed still training (True: prune every seed at its next report).  Returns
    the seeds' summaries in seed order and whether the trial was pruned.  A seed that ends before the
    others (fewer reports) leaves the rounds; the later rounds hold the seeds still training."""
    ctx = seed_context(spec.backend)
    pipes, procs = [], []
    try:
        for i in range(len(spec.configs)):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_seed_main, args=(child, spec, i, trainer), name=f"seed-{i}", daemon=False)
            proc.start()
            child.close()
            pipes.append(parent)
            procs.append(proc)
        return _rounds(spec, pipes, procs, on_round)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()


def _rounds(spec: TrialSpec, pipes: list[Any], procs: list[Any],
            on_round: RoundReport) -> tuple[list[dict[str, Any]], bool]:
    results: list[dict[str, Any] | None] = [None] * len(pipes)
    live, prune, round_ = list(range(len(pipes))), False, 0
    while live:
        scores: dict[int, float] = {}
        for i in list(live):
            pipes[i].send(Decision(prune))  # the turn: start, or the answer to the seed's last report
            message = _receive(spec, pipes[i], procs[i], i)
            if isinstance(message, Report):
                scores[i] = message.value
                continue
            results[i] = message
            live.remove(i)
            procs[i].join()
        if scores and not prune:
            prune = bool(on_round(round_, scores))
            round_ += 1
    return [r for r in results if r is not None], prune


def _receive(spec: TrialSpec, pipe: Any, proc: Any, i: int) -> Any:
    seed = spec.configs[i].get("seed")
    try:
        message = pipe.recv()
    except EOFError:
        proc.join()
        raise SeedFailed(f"seed {seed} (index {i}): its process ended without a result "
                         f"(exit code {proc.exitcode})") from None
    if isinstance(message, tuple) and message[0] == "error":
        raise SeedFailed(f"seed {seed}: {message[1]}\n{message[2]}")
    if isinstance(message, tuple) and message[0] == "done":
        return message[1]
    return message
