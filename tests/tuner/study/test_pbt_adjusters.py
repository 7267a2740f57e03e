"""The online adjusters inside PBT members, and PBT tuning their targets: the ESS adjuster's state
travels with a member's checkpoint from segment to segment (also to the member that copies it), and
each segment runs with the target its trial was given (explore perturbs ``adjuster.target_ess``)."""

import json
import os

import numpy as np
import optuna

from tests.tuner.conftest import journal_of, run_app


def _adjust(run_dir: str) -> dict:
    """The adjuster part of a segment's checkpoint (``checkpoint.npz``'s JSON meta)."""
    with np.load(os.path.join(run_dir, "checkpoint.npz")) as arrays:
        return json.loads(arrays["__meta__"].tobytes().decode("utf-8"))["adjust"]["adjuster"]


def test_pbt_members_carry_their_adjuster_and_pbt_tunes_its_target(tmp_path) -> None:
    run_app(["tuner=pbt", "agent=dqn", "adjuster=ess", "buffer=prioritized", "tuner.population=2",
             "tuner.generations=2", "tuner.interval=600", "agent.learning_starts=100", "logger=none", "search=none",
             "+search.values.adjuster.target_ess='interval(0.3, 0.9)'", "tuner.study_name=adj"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "adj"
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal_of(study_dir)))
    trials = optuna.load_study(study_name="adj", storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    runs = {}
    for t in sorted(trials, key=lambda t: t.user_attrs["pbt_generation"]):
        member, generation = t.user_attrs["pbt_member"], t.user_attrs["pbt_generation"]
        adjuster = _adjust(str(study_dir / "members" / str(member) / f"gen_{generation}"))
        # the segment ran with its own trial's target, whatever checkpoint it continued
        assert adjuster["spec"]["kind"] == "ess"
        assert adjuster["spec"]["target_ess"] == t.params["adjuster.target_ess"]
        runs[member, generation] = adjuster["state"]["runs"]
        if generation == 1:  # the ESS state went on from the parent's checkpoint: more adjustments, not afresh
            parent = t.user_attrs["pbt_parent"]
            assert runs[member, 1] > runs[parent, 0] > 0
    g1 = [t for t in trials if t.user_attrs["pbt_generation"] == 1]
    copied = [t for t in g1 if t.user_attrs["pbt_parent"] != t.user_attrs["pbt_member"]]
    assert len(copied) == 1  # the bottom quantile of 2 is one member; its target was perturbed x0.8 or x1.2
    (child,) = copied
    source = next(t for t in trials if t.user_attrs["pbt_generation"] == 0
                  and t.user_attrs["pbt_member"] == child.user_attrs["pbt_parent"])
    ratio = child.params["adjuster.target_ess"] / source.params["adjuster.target_ess"]
    assert any(abs(ratio - r) < 1e-9 for r in (0.8, 1.2)) or child.params["adjuster.target_ess"] in (0.3, 0.9)
