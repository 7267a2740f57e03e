"""PBT members of several seeds (``tuner=pbt tuner.n_seeds=N``): each member trains its config on N seeds
of its own, seed i continuing its parent's seed i, and is ranked on their aggregate."""

import json
import os
from types import SimpleNamespace

import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import run_app
from tests.tuner.study.test_pbt import _args, _study
from tuner.common.errors import ConfigError
from tuner.study.pbt import check_test_seeds, member_checkpoints, pbt_settings
from tuner.study.protocol import SeedSettings


def _seed_result(run_dir: str, seed: int) -> dict:
    with open(os.path.join(run_dir, f"seed_{seed}", "result.json")) as f:
        return json.load(f)


def test_members_of_two_seeds_continue_their_parents_seed_by_seed(tmp_path) -> None:
    args = [*_args("seeds", population=2, generations=2, interval=300), "tuner.n_seeds=2", "tuner.aggregation=min"]
    out = run_app(args, cwd=str(tmp_path))
    assert "winner: member" in out.stdout
    study_dir = tmp_path / "studies" / "seeds"
    study = _study(study_dir, "seeds")
    done = {(t.user_attrs["pbt_member"], t.user_attrs["pbt_generation"]): t
            for t in study.get_trials(states=(TrialState.COMPLETE,))}
    assert set(done) == {(0, 0), (1, 0), (0, 1), (1, 1)}
    for (m, g), t in done.items():
        run_dir = t.user_attrs["run_dir"]
        # member m's own seeds: the config's seed (0) + m x 2, + 1
        assert t.user_attrs["tuning_seeds"] == [2 * m, 2 * m + 1]
        assert t.user_attrs["checkpoints"] == [os.path.join(run_dir, f"seed_{s}", "checkpoint.npz")
                                               for s in (2 * m, 2 * m + 1)]
        assert all(os.path.isfile(p) for p in t.user_attrs["checkpoints"])
        assert t.user_attrs["checkpoint"] == t.user_attrs["checkpoints"][0]
        # the segment's score is tuner.aggregation (min) of its seeds' scores, which each trained on
        results = [_seed_result(run_dir, s) for s in (2 * m, 2 * m + 1)]
        assert [r["config"]["seed"] for r in results] == [2 * m, 2 * m + 1]
        assert t.value == pytest.approx(min(r["objective"] for r in results))
        assert [r["env_steps"] for r in results] == [(g + 1) * 300] * 2  # each seed's counters continue
        if g == 0:
            assert t.user_attrs["init_from"] == [None, None]
            continue
        # exploit: the member with the lower generation-0 score copies the other, seed by seed
        parent = done[(t.user_attrs["pbt_parent"], 0)]
        assert t.user_attrs["init_from"] == parent.user_attrs["checkpoints"]
        assert [r["continued_from"] for r in results] == parent.user_attrs["checkpoints"]
    worse = min((0, 1), key=lambda m: done[(m, 0)].value)
    assert done[(worse, 1)].user_attrs["pbt_parent"] == 1 - worse
    assert done[(1 - worse, 1)].user_attrs["pbt_parent"] == 1 - worse
    # the same study with one seed a member would change what its segments mean: refused, nothing run
    n = len(study.trials)
    again = run_app([*args[:-2], "tuner.n_seeds=1"], cwd=str(tmp_path), check=False)
    assert again.returncode == 2 and "n_seeds" in again.stderr
    assert len(_study(study_dir, "seeds").trials) == n


def test_test_seeds_must_avoid_every_seed_of_every_member() -> None:
    settings = SimpleNamespace(population=2, n_seeds=3, seeds=SeedSettings(tuning=None, test=[5]))
    with pytest.raises(ConfigError, match="5"):
        check_test_seeds(settings, 0)  # members train seeds 0-2 and 3-5
    check_test_seeds(SimpleNamespace(population=2, n_seeds=3, seeds=SeedSettings(tuning=None, test=[6])), 0)


@pytest.mark.parametrize("node, key", [({"n_seeds": 0}, "tuner.n_seeds: "),
                                       ({"seeds": {"tuning": [1, 2]}}, "tuner.seeds.tuning: "),
                                       ({"n_seeds": 2, "seeds": {"tuning": [1, 2]}}, "tuner.seeds.tuning: ")])
def test_members_seeds_are_named_by_n_seeds_only(node, key) -> None:
    with pytest.raises(ConfigError) as err:
        pbt_settings({"name": "pbt", "population": 2, **node})
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


def test_member_checkpoints_read_as_data() -> None:
    def seg(**attrs):
        return SimpleNamespace(user_attrs=attrs)

    assert member_checkpoints(seg(checkpoint="a.npz")) == ["a.npz"]
    assert member_checkpoints(seg(checkpoint="a.npz", checkpoints=["a.npz", "b.npz"])) == ["a.npz", "b.npz"]
    assert member_checkpoints(seg(checkpoints=["a.npz", 3])) == ["a.npz", ""]  # not a path: none
    assert member_checkpoints(seg()) == [""]
