"""``logger=csv`` and ``logger=tensorboard``: the run's history as files in its run dir.

* :class:`CsvCallback` writes ``progress.csv`` the way Stable-Baselines3 does: one row per logged
  episode (every ``logger.log_every``) and one per evaluation, a header with every key seen so far
  (a key that first appears later, e.g. ``loss`` once learning starts or ``eval/mean_return``,
  rewrites the file with the wider header; cells a row lacks stay empty).
* :class:`TensorboardCallback` writes TensorBoard event files to ``<run dir>/tensorboard/`` with
  tensorboardX (the ``[tensorboard]`` extra; no TensorFlow needed): every row value as a scalar whose
  step is ``env_steps``, and the run's config (secrets masked) as the text summary ``config``.

The rows are :mod:`tuner.logs.metrics`' rows, the same as wandb's.  Whatever either writes goes
through :func:`tuner.common.redact.scrub` first, as the wandb logger does: secrets never reach a file.
A logger that cannot write (a full disk, a missing extra) prints one warning and stops; training
goes on.
"""

from __future__ import annotations

import csv
import os
import sys
from typing import Any

from note_rl import Callback

from ..common.redact import find_secrets, known_secrets, redact_text, remember, scrub
from .metrics import RowMaker, eval_row

__all__ = ["CsvCallback", "TensorboardCallback", "CSV_NAME", "TB_DIR"]

CSV_NAME = "progress.csv"
TB_DIR = "tensorboard"


class _FileLogger(Callback):
    """Rows every ``log_every`` episodes and at each evaluation, handed to :meth:`write`."""

    what = "logger"

    def __init__(self, cfg: dict[str, Any], run_dir: str | None) -> None:
        self.opts = cfg.get("logger") or {}
        self.dir = os.path.abspath(self.opts.get("dir") or run_dir or os.getcwd())
        self.every = max(1, int(self.opts.get("log_every") or 1))
        self.rows = 0
        self.failed = False
        self._maker = RowMaker()
        remember(find_secrets(cfg))  # a storage password in the config is masked in every later write

    def on_adjust(self, logs: dict[str, Any] | None = None) -> None:
        self._maker.on_adjust(logs)

    def on_episode_end(self, episode: int, logs: dict[str, Any] | None = None) -> None:
        if self.failed or (episode + 1) % self.every:
            return
        self._guarded(self._maker.row(self.model, logs or {}))

    def log_evaluation(self, record: dict[str, Any]) -> None:
        if not self.failed:
            self._guarded(eval_row(record))

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if not self.failed:
            try:
                self.close()
            except Exception as exc:  # noqa: BLE001 - the run's results stand without the log
                self._warn(exc)

    def _guarded(self, row: dict[str, Any]) -> None:
        try:
            self.write(scrub(row))
            self.rows += 1
        except Exception as exc:  # noqa: BLE001 - logging must never cost a training result
            self._warn(exc)

    def _warn(self, exc: BaseException) -> None:
        self.failed = True
        print(redact_text(f"warning: {self.what} logging stopped, training continues: {type(exc).__name__}: {exc}"),
              file=sys.stderr, flush=True)

    def write(self, row: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        pass


class CsvCallback(_FileLogger):
    """``progress.csv`` in the run dir (or ``logger.dir``): see the module docstring."""

    what = "csv"

    def __init__(self, cfg: dict[str, Any], run_dir: str | None) -> None:
        super().__init__(cfg, run_dir)
        self.path = os.path.join(self.dir, CSV_NAME)
        self.keys: list[str] = []
        self._file: Any = None

    def write(self, row: dict[str, Any]) -> None:
        new = [k for k in row if k not in self.keys]
        if new or self._file is None:
            self.keys += new
            self._rewrite()
        csv.DictWriter(self._file, fieldnames=self.keys, restval="").writerow(row)
        self._file.flush()  # a run killed mid-way keeps every row written so far

    def _rewrite(self) -> None:
        """(Re)write the file with the current header: the rows so far are read back and kept."""
        old: list[dict[str, str]] = []
        if self._file is not None:
            self._file.close()
            with open(self.path, newline="") as f:
                old = list(csv.DictReader(f))
        else:
            os.makedirs(self.dir, exist_ok=True)
        tmp = f"{self.path}.tmp-{os.getpid()}"
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.keys, restval="")
            writer.writeheader()
            writer.writerows(old)
        os.replace(tmp, self.path)
        self._file = open(self.path, "a", newline="")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TensorboardCallback(_FileLogger):
    """TensorBoard event files in ``<run dir>/tensorboard/`` (or ``<logger.dir>/tensorboard/``)."""

    what = "tensorboard"

    def __init__(self, cfg: dict[str, Any], run_dir: str | None) -> None:
        super().__init__(cfg, run_dir)
        self.path = os.path.join(self.dir, TB_DIR)
        self.config = scrub(cfg, known_secrets())
        self.writer: Any = None
        try:
            self._open()
        except Exception as exc:  # noqa: BLE001 - e.g. the [tensorboard] extra is not installed
            self._warn(exc)

    def _open(self) -> None:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise ImportError("logger=tensorboard needs tensorboardX: "
                              "pip install 'note-rl-tuner[tensorboard]'") from None
        import yaml

        os.makedirs(self.path, exist_ok=True)
        self.writer = SummaryWriter(logdir=self.path, flush_secs=10)
        text = redact_text(yaml.safe_dump(self.config, sort_keys=False, default_flow_style=False))
        # markdown in TensorBoard's text tab: indent by 4 so the YAML shows as a code block
        self.writer.add_text("config", "\n".join("    " + line for line in text.splitlines()), 0)

    def write(self, row: dict[str, Any]) -> None:
        step = int(row["env_steps"])
        for key, value in row.items():
            if key != "env_steps" and isinstance(value, (int, float)):
                self.writer.add_scalar(key, float(value), step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
