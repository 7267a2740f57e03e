"""``distributed_training`` with ``tf.distribute.MirroredStrategy`` over two logical CPU devices (run
in a fresh process, see mirrored_child.py): an update on a global batch split over two replicas
equals the one-device update on the whole batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def result() -> dict:
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "note_rl", "mirrored_child.py")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("clip", ["None", "0.05"])
def test_two_replicas_match_one_device(result, clip) -> None:
    """Six Adam updates of a DQN on the same 64-item batches (with and without gradient clipping,
    which needs the global gradient): weights, losses and the TD errors prioritized replay receives
    (gathered in batch order) agree to float32 rounding."""
    assert result["replicas"] == 2
    single, mirrored = result[f"single_{clip}"], result[f"mirrored_{clip}"]
    for a, b in zip(single["weights"], mirrored["weights"], strict=True):
        np.testing.assert_allclose(np.array(b), np.array(a), atol=1e-5)
    np.testing.assert_allclose(mirrored["losses"], single["losses"], rtol=1e-5)
    np.testing.assert_allclose(mirrored["td"], single["td"], atol=1e-5)
    assert len(single["td"]) == 64


def test_seed_snippet_trains_with_prioritized_replay(result) -> None:
    trained = result["trained"]
    assert trained["episodes"] == 10 and trained["batch_counter"] > 0 and trained["td_written"]


def test_misuse_is_one_clear_error(result) -> None:
    errors = result["errors"]
    assert "created outside MirroredStrategy.scope()" in errors["outside"]
    assert "batch=63 does not split evenly over 2 replicas" in errors["odd_batch"]
    assert "pass a tf.distribute strategy" in errors["no_strategy"]
    assert errors["batch_kept"] == 64
