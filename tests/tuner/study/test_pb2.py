"""PB2's explore step (tuner/study/pb2.py): the GP worked out by hand, the bandit's choice on a
constructed landscape, GP-BUCB's spreading of a batch, determinism, and a real ``tuner.explore=pb2`` run."""

import math

import numpy as np
import optuna
import pytest

from tests.tuner.conftest import journal_of, run_app
from tuner.config.search import parse_space
from tuner.study.pb2 import EPS, GP, NOISE, from_unit, pb2_explore, pb2_rng, segment_data, to_unit
from tuner.study.pbt_rules import Step

SPACE = parse_space({"groups": {}, "values": {"optimizer": {"lr": "tag(log, interval(1e-4, 1e-2))"},
                                              "agent": {"gamma": "choice(0.9, 0.99)"}}})
LR = next(p for p in SPACE if p.name == "optimizer.lr")


def test_unit_mapping_of_a_log_interval() -> None:
    assert to_unit(LR, 1e-4) == 0.0 and to_unit(LR, 1e-2) == 1.0 and math.isclose(to_unit(LR, 1e-3), 0.5)
    assert math.isclose(from_unit(LR, 0.5), 1e-3) and math.isclose(from_unit(LR, 0.25), 10 ** -3.5)


def test_the_gp_posterior_by_hand() -> None:
    """Two points at x = 0 and 1 (lengthscale 1, both in generation 1): y standardised to -1, +1;
    K = [[1 + n, e], [e, 1 + n]] with e = exp(-1/2), n = NOISE; at x = 0, generation 1:
    mean = [1, e] K^-1 [-1, 1] = (e - 1) / (1 + n - e), in y's units x std (1) + mean (1)."""
    gp = GP(np.array([1.0, 1.0]), np.array([[0.0], [1.0]]), np.array([0.0, 2.0]), lengthscale=1.0)
    e, n = math.exp(-0.5), NOISE
    mu, sigma = gp.predict(1, np.array([[0.0]]))
    assert math.isclose(mu[0], 1.0 + (e - 1) / (1 + n - e), rel_tol=1e-9)
    k_inv = np.linalg.inv(np.array([[1 + n, e], [e, 1 + n]]))
    k = np.array([1.0, e])
    assert math.isclose(sigma[0], math.sqrt(1 - k @ k_inv @ k), rel_tol=1e-9)
    # one generation later the same point is less known: the time kernel (1 - EPS)^(1/2) discounts the data
    mu2, sigma2 = gp.predict(2, np.array([[0.0]]))
    assert math.isclose(mu2[0] - 1.0, (mu[0] - 1.0) * (1 - EPS) ** 0.5, rel_tol=1e-9) and sigma2[0] > sigma[0]


def _history(values: dict[int, float]) -> dict:
    """Generation 0: two members scoring 0; generation 1: each trained with an lr; its score's rise is
    ``values[i]`` (the lr's unit point -> the improvement)."""
    history = {(0, 0): (0.0, 0, {"optimizer.lr": 1e-3, "agent.gamma": 0.99}),
               (1, 0): (0.0, 1, {"optimizer.lr": 1e-3, "agent.gamma": 0.99})}
    for m, (u, rise) in enumerate(values.items()):
        history[(m, 1)] = (rise, m, {"optimizer.lr": from_unit(LR, u), "agent.gamma": 0.99})
    return history


def test_segment_data_is_each_segments_rise_over_its_parent() -> None:
    history = _history({0.2: 5.0, 0.8: 1.0})
    history[(1, 1)] = (1.0, 0, history[(1, 1)][2])  # member 1 had copied member 0: its rise is from member 0's 0.0
    t, x, y = segment_data(history, [LR], maximize=True)
    assert t.tolist() == [1.0, 1.0] and np.allclose(x[:, 0], [0.2, 0.8]) and y.tolist() == [5.0, 1.0]
    assert segment_data(history, [LR], maximize=False)[2].tolist() == [-5.0, -1.0]


def test_the_bandit_picks_the_lr_that_improved_most_and_spreads_a_batch() -> None:
    """Rises peaked at unit 0.3 (lr 4e-4): the first exploiting member's lr lands near it; the second,
    once the first is pending (GP-BUCB: less uncertainty left there), near the peak but not on the same
    point; categorical gamma keeps PBT's value."""
    rises = {u: 10 * math.exp(-((u - 0.3) ** 2) / 0.02) for u in (0.0, 0.15, 0.3, 0.45, 0.6, 0.8, 1.0)}
    history = {(0, 0): (0.0, 0, {"optimizer.lr": 1e-3, "agent.gamma": 0.99})}
    for m, (u, rise) in enumerate(rises.items()):
        history[(m, 0)] = (0.0, m, {"optimizer.lr": 1e-3, "agent.gamma": 0.99})
        history[(m, 1)] = (rise, m, {"optimizer.lr": from_unit(LR, u), "agent.gamma": 0.99})
    pbt_steps = [Step(0, 0, {"optimizer.lr": 1e-3, "agent.gamma": 0.99}),
                 Step(1, 0, {"optimizer.lr": 2e-3, "agent.gamma": 0.9}, {"optimizer.lr": (1e-3, 2e-3, "x1.2")}),
                 Step(2, 0, {"optimizer.lr": 5e-3, "agent.gamma": 0.99}, {"optimizer.lr": (1e-3, 5e-3, "x1.2")})]
    steps = pb2_explore(pbt_steps, history, SPACE, pb2_rng(3, 2), generation=2)
    assert steps[0] is pbt_steps[0]  # not exploiting: untouched
    first, second = (to_unit(LR, s.params["optimizer.lr"]) for s in steps[1:])
    assert abs(first - 0.3) < 0.1 and abs(second - 0.3) < 0.1 and abs(second - first) > 0.01
    assert steps[1].params["agent.gamma"] == 0.9 and steps[1].changes["optimizer.lr"][::2] == (1e-3, "pb2")
    again = pb2_explore(pbt_steps, history, SPACE, pb2_rng(3, 2), generation=2)
    assert [s.params for s in again] == [s.params for s in steps]  # a resumed driver decides the same


def test_with_too_little_data_pb2_explores_as_pbt() -> None:
    steps = [Step(1, 0, {"optimizer.lr": 2e-3, "agent.gamma": 0.9}, {"optimizer.lr": (1e-3, 2e-3, "x1.2")})]
    history = {(0, 0): (0.0, 0, {"optimizer.lr": 1e-3, "agent.gamma": 0.99})}
    assert pb2_explore(steps, history, SPACE, pb2_rng(0, 1), generation=1) == steps


@pytest.mark.slow
def test_a_real_pb2_run(tmp_path) -> None:
    run_app(["tuner=pbt", "tuner.explore=pb2", "agent=dqn", "tuner.population=4", "tuner.generations=3",
             "tuner.interval=500", "agent.learning_starts=100", "logger=none", "search=none",
             "+search.values.optimizer.lr='tag(log, interval(1e-4, 1e-2))'", "tuner.study_name=pb2"], cwd=str(tmp_path))
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal_of(tmp_path / "studies" / "pb2")))
    trials = optuna.load_study(study_name="pb2", storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 12
    hows = {g: [h for t in trials if t.user_attrs["pbt_generation"] == g
                for _, _, h in t.user_attrs.get("pbt_changes", {}).values()] for g in (1, 2)}
    # generation 1 has no finished segment of generation >= 1 to learn from: PBT's perturbation;
    # generation 2 learns from generation 1's four: the bandit's
    assert hows[1] and all(h in ("x0.8", "x1.2") for h in hows[1])
    assert hows[2] and all(h == "pb2" for h in hows[2])
