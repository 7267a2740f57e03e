"""A trial's seeds in turns (``tuner.seed_order=interleaved``, tuner/run/seed_turns.py).

By hand: scripted seed processes (real forked processes, a real pipe) report known scores, and the
rounds, their combined scores, the turn order, pruning and failures are checked against what the
rules give.  Then real studies: a seed trained in turns is the run it is alone, and a pruned trial
stops all its seeds at their first report."""

import json
import os

import optuna
import pytest

from tests.tuner.conftest import TINY, run_app
from tuner.common.messages import TrialSpec
from tuner.run.seed_turns import SeedFailed, train_in_turns
from tuner.run.trial_worker import _reporter


def _scripted(conn, spec: TrialSpec, i: int) -> dict:
    """Seed ``i`` reports ``scores`` one by one, noting each report in ``log`` before it is sent (so
    the log's order is the order the seeds held the turn)."""
    cfg = spec.configs[i]
    report = _reporter(conn)
    for k, value in enumerate(cfg["scores"]):
        with open(cfg["log"], "a") as f:
            f.write(f"{i} {k}\n")
        if report(k, value):
            return {"seed": cfg["seed"], "reports": k + 1, "pruned": True}
    if cfg.get("fail") == "raise":
        raise ValueError("the env broke\nsecond line")
    if cfg.get("fail") == "exit":
        os._exit(3)
    return {"seed": cfg["seed"], "reports": len(cfg["scores"]), "pruned": False}


def _spec(tmp_path, scores, extra=None) -> TrialSpec:
    log = str(tmp_path / "turns.log")
    configs = [dict(seed=10 + i, scores=s, log=log, **(extra or {}).get(i, {})) for i, s in enumerate(scores)]
    return TrialSpec(trial=0, backend="torch", run_dir=str(tmp_path), configs=configs, interleaved=True)


def _combined(seen, prune_at=None, how=lambda xs: sum(xs) / len(xs)):
    """A round report that records (round, the seeds' scores combined) and prunes at ``prune_at``."""
    def on_round(r, scores):
        seen.append((r, how(list(scores.values()))))
        return r == prune_at
    return on_round


def _turns(tmp_path):
    return [tuple(map(int, line.split())) for line in open(tmp_path / "turns.log")]


def test_every_round_reports_the_seeds_scores_combined_and_the_seeds_take_turns(tmp_path) -> None:
    seen = []
    results, pruned = train_in_turns(_spec(tmp_path, [[0, 10, 20], [2, 12, 22], [4, 14, 24]]), _scripted,
                                     _combined(seen))
    assert seen == [(0, 2.0), (1, 12.0), (2, 22.0)] and not pruned
    assert [r["seed"] for r in results] == [10, 11, 12] and all(r["reports"] == 3 for r in results)
    # one seed at a time: every seed makes its k-th report before any makes its (k + 1)-th
    assert _turns(tmp_path) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]


def test_a_prune_stops_every_seed_at_its_next_report(tmp_path) -> None:
    seen = []
    results, pruned = train_in_turns(_spec(tmp_path, [[5, 5, 5, 5]] * 3), _scripted, _combined(seen, 1, min))
    # round 1's report says prune: each seed hears it as the answer to its second report
    assert pruned and seen == [(0, 5), (1, 5)]
    assert [(r["reports"], r["pruned"]) for r in results] == [(2, True)] * 3
    assert len(_turns(tmp_path)) == 6


def test_a_seed_with_fewer_reports_leaves_the_later_rounds(tmp_path) -> None:
    seen = []
    results, _ = train_in_turns(_spec(tmp_path, [[1, 3, 5], [7], [2, 4, 6]]), _scripted, _combined(seen))
    assert seen == [(0, 10 / 3), (1, 3.5), (2, 5.5)]
    assert [r["reports"] for r in results] == [3, 1, 3]


@pytest.mark.parametrize("fail, words", [("raise", "seed 11: ValueError: the env broke"),
                                         ("exit", "seed 11 (index 1): its process ended without a result (exit code 3)")])
def test_a_failing_seed_fails_the_trial_with_its_seed_named(tmp_path, fail, words) -> None:
    with pytest.raises(SeedFailed) as err:
        train_in_turns(_spec(tmp_path, [[1, 2], [1, 2], [1, 2]], {1: {"fail": fail}}), _scripted, _combined([]))
    assert str(err.value).startswith(words)


def _study(tmp_path, name: str, overrides: list[str]) -> optuna.Study:
    run_app(["tuner=optuna", f"tuner.study_name={name}", "search=none", "tuner.reevaluate.top_k=0",
             "tuner.seeds.test=0", *TINY, *overrides], cwd=str(tmp_path))
    return optuna.load_study(study_name=name, storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "studies" / "journal.log"))))


def test_a_seed_trained_in_turns_is_the_run_it_is_alone(tmp_path) -> None:
    """The same trial (DQN on CartPole, 2 seeds, no pruner) with its seeds one after another and in
    turns: every seed's evaluations and score agree to the digit; in turns, the trial's intermediate
    value of round k is the mean of its seeds' k-th evaluations (one after another: seed i's k-th
    evaluation at step i * 10000 + k)."""
    common = ["tuner.n_trials=1", "tuner.pruner=none", "tuner.n_seeds=2", "seed=7", "eval.every=100", "eval.episodes=2"]
    runs = {order: _study(tmp_path, order, [*common, f"tuner.seed_order={order}", f"tuner.study_dir=studies/{order}"])
            for order in ("sequential", "interleaved")}
    evaluations = {}
    for order, study in runs.items():
        (trial,) = study.trials
        assert trial.state.name == "COMPLETE", trial.user_attrs.get("fail_reason")
        evaluations[order] = [[e["mean"] for e in json.load(open(os.path.join(
            trial.user_attrs["run_dir"], f"seed_{seed}", "result.json")))["evaluations"]] for seed in (7, 8)]
    assert evaluations["sequential"] == evaluations["interleaved"] and len(evaluations["sequential"][0]) == 3
    seq, inter = runs["sequential"].trials[0], runs["interleaved"].trials[0]
    assert seq.value == inter.value and seq.user_attrs["seeds"] == [
        dict(s, wall_time_s=t["wall_time_s"]) for s, t in zip(inter.user_attrs["seeds"], seq.user_attrs["seeds"])]
    first, second = evaluations["interleaved"]
    assert inter.intermediate_values == {k: pytest.approx((a + b) / 2) for k, (a, b) in enumerate(zip(first, second))}
    assert seq.intermediate_values == {i * 10_000 + k: v for i, seed in enumerate((first, second))
                                       for k, v in enumerate(seed)}


def test_a_pruned_trial_stops_all_its_seeds_at_their_first_report(tmp_path) -> None:
    """Trial 0 (Steady-v0) scores 50 at every report of its 3 seeds; trial 1 (Broke-v0) scores 0.
    The median pruner (1 startup trial, no warm-up) prunes trial 1 at round 0: every one of its seeds
    stops at its first evaluation, none trains its whole budget."""
    study = _study(tmp_path, "order", [
        "env.module=tests.tuner.lucky_envs", "env.id=Broke-v0", "+search.values.env.id='choice(Steady-v0, Broke-v0)'",
        "+tuner.enqueue=[{env.id: Steady-v0}]", "tuner.sampler=random", "tuner.n_trials=2",
        "tuner.n_startup_trials=1", "tuner.n_warmup_steps=0", "tuner.n_seeds=3", "tuner.seed_order=interleaved",
        "eval.every=100", "eval.episodes=1"])
    steady, broke = study.trials
    assert steady.state.name == "COMPLETE" and steady.value == 50.0
    assert steady.intermediate_values == {0: 50.0, 1: 50.0, 2: 50.0}
    assert broke.state.name == "PRUNED" and broke.intermediate_values == {0: 0.0}
    assert [s["seed"] for s in broke.user_attrs["seeds"]] == [0, 1, 2]
    assert all(s["env_steps"] == 100 for s in broke.user_attrs["seeds"])


def test_wilcoxon_in_turns_pairs_every_evaluation_of_every_seed(tmp_path) -> None:
    """Trial 0 (Steady-v0) scores 50 at each of the 3 evaluations of its 2 seeds; trial 1 (Broke-v0)
    scores 0.  In turns with ``pruner=wilcoxon`` each seed's every evaluation is an instance (step
    seed index x 10000 + round), paired with the best trial's same step.  After round 0, two
    instances all worse: exact one-sided p = 1/4 (go on); after round 1, four: 1/16 = 0.0625 < 0.1:
    trial 1 stops both seeds at their second evaluation (200 of 300 env steps)."""
    study = _study(tmp_path, "wx", [
        "env.module=tests.tuner.lucky_envs", "env.id=Broke-v0", "+search.values.env.id='choice(Steady-v0, Broke-v0)'",
        "+tuner.enqueue=[{env.id: Steady-v0}]", "tuner.sampler=random", "tuner.n_trials=2", "tuner.pruner=wilcoxon",
        "tuner.n_warmup_steps=0", "tuner.n_seeds=2", "tuner.seed_order=interleaved", "eval.every=100",
        "eval.episodes=1"])
    steady, broke = study.trials
    assert steady.state.name == "COMPLETE" and steady.value == 50.0
    assert steady.intermediate_values == {s: 50.0 for s in (0, 1, 2, 10_000, 10_001, 10_002)}
    assert broke.state.name == "PRUNED" and broke.intermediate_values == {s: 0.0 for s in (0, 1, 10_000, 10_001)}
    assert [(s["seed"], s["env_steps"]) for s in broke.user_attrs["seeds"]] == [(0, 200), (1, 200)]
