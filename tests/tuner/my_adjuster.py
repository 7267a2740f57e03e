"""A user's own adjuster and logger classes, named by ``_target_`` in test configs."""

from typing import Any

from note_rl.adjusters import GNSAdjuster
from note_rl.callbacks import Callback


class SlowGNS(GNSAdjuster):
    """A GNS adjuster with one argument of its own."""

    def __init__(self, slowdown: int = 1, **kwargs: Any) -> None:
        self.slowdown = slowdown
        super().__init__(**kwargs)


class RecordingLogger(Callback):
    """A logger callback that keeps what the run handed it."""

    def __init__(self, cfg: dict, run_dir: str | None, label: str = "") -> None:
        self.cfg, self.run_dir, self.label = cfg, run_dir, label
