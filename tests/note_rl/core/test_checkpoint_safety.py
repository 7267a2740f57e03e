"""Checkpoints do not trust their contents: metadata follows a schema, sizes are bounded before
anything is decompressed, every defect is a CheckpointError naming the member; a save killed midway
leaves no temporary file behind after the next save."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from note_rl import CheckpointError
from note_rl.core import checkpoint
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    agent = agents_module("torch").DQN(4, 16, 2, seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.2), pool_size=200, batch=8, learning_starts=8, seed=0)
    train(agent, "torch", make_optimizer("torch", agent.param), 2, p=0, jit_compile=False)
    path = str(tmp_path_factory.mktemp("ckpt") / "full.npz")
    agent.save(path)
    return agent, path


def _tampered(tmp_path, path, change):
    meta, arrays = checkpoint.read_npz(path)
    change(meta, arrays)
    out = str(tmp_path / "tampered.npz")
    checkpoint.write_npz(out, meta, arrays)
    return out


@pytest.mark.parametrize("change,message", [
    (lambda m, a: m.update(settings=[1, 2]), "metadata 'settings' is a list"),
    (lambda m, a: m["settings"].update(restore=1), "metadata 'settings' has an unknown entry 'restore'"),
    (lambda m, a: m["counters"].update(__class__=1), "metadata 'counters' has an unknown entry '__class__'"),
    (lambda m, a: m.pop("counters"), "metadata 'counters' is missing"),
    (lambda m, a: m.update(n_param=True), "metadata 'n_param' is a bool"),
    (lambda m, a: m.update(kind="weird"), "metadata 'kind' is 'weird'"),
    (lambda m, a: a.pop("param/0"), "member 'param/0' is missing"),
    (lambda m, a: m["modules"].update(ghost=2), "member 'module/ghost/0' is missing"),
    (lambda m, a: [a.pop(k) for k in list(a) if k.startswith("buffer/")], "the buffer state does not load"),
])
def test_tampered_but_valid_files_are_refused_at_restore(saved, tmp_path, change, message) -> None:
    agent, path = saved
    bad = _tampered(tmp_path, path, change)
    with pytest.raises(CheckpointError, match=message):
        agent.restore(bad)
    agent.restore(path)  # the genuine file still loads


def _zip(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> str:
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(path)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_sizes_are_bounded_before_decompression(saved, tmp_path) -> None:
    agent, _ = saved
    meta = _npy(np.frombuffer(json.dumps({"format": checkpoint.FORMAT}).encode(), np.uint8))
    # 2 KiB on disk that would inflate to 64 MiB
    bomb = _zip(tmp_path / "bomb.npz", {"__meta__.npy": meta, "x.npy": _npy(np.zeros(8 << 20))}, zipfile.ZIP_DEFLATED)
    with pytest.raises(CheckpointError, match=r"member 'x.npy' would expand \d+ bytes to 67108992"):
        agent.restore(bomb)
    # a header that declares a 8 GB array in a member of a few bytes
    header = _npy(np.zeros(3))
    lying = header.replace(b"(3,)", b"(1000000000,)").replace(b"       ", b"", 1)
    liar = _zip(tmp_path / "liar.npz", {"__meta__.npy": meta, "x.npy": lying})
    with pytest.raises(CheckpointError, match=r"member 'x.npy' declares a \(1000000000,\) float64 array"):
        agent.restore(liar)


def test_a_killed_save_leaves_no_temporary_file_after_the_next_save(saved, tmp_path) -> None:
    agent, _ = saved
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".model.npz.tmp-{dead.pid}"
    stale.write_bytes(b"\0" * (1 << 20))  # what a save killed midway leaves
    live = tmp_path / f".model.npz.tmp-{subprocess.os.getppid()}"  # another process still saving
    live.write_bytes(b"x")
    agent.save_param(str(tmp_path / "model.npz"))
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model.npz", live.name])
