"""LRFinder, OptFinder and ParallelFinder: the maths, and end to end through both the Python API
and the config, with every training in a fresh process and the results in the study's storage."""

import json
import os
import subprocess
import sys

import numpy as np
import optuna
import pytest

from note_rl.policy import EpsGreedyQPolicy, SoftmaxPolicy
from tests.conftest import agents_module
from tests.tuner.conftest import NO_REEVAL, REPO, journal_of, run_app
from tests.tuner.wandb_read import offline_runs, read_run
from tuner.finders import LRRangeTest, windowed_normalize
from tuner.finders.lr import lagged_change, plot_curve, suggest_lr


def _journal(study_dir):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(journal_of(study_dir)))
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
    mine = [n for n in names if n == os.path.basename(study_dir)]  # the dir's study, in a journal shared with others
    return [optuna.load_study(study_name=n, storage=storage) for n in (mine or names)]


def _dqn(backend, env="CartPole-v1", seed=0):
    agent = agents_module(backend).DQN(4 if env == "CartPole-v1" else 6, 16, 2, env=env, seed=seed)
    agent.set(policy=EpsGreedyQPolicy(0.2), pool_size=2000, batch=16, learning_starts=16, seed=seed)
    return agent


def test_lr_schedule_reaches_end_lr_by_constant_factor() -> None:
    import torch

    agent = _dqn("torch")
    agent.optimizer = [torch.optim.Adam(agent.param, lr=0.5)]
    test = LRRangeTest(start_lr=1e-4, end_lr=1.0, N=77)
    test.set_model(agent)
    test.on_train_begin()
    for i in range(77):
        assert agent.optimizer[0].param_groups[0]["lr"] == pytest.approx(1e-4 * test.factor ** i, rel=1e-12)
        test.on_batch_end(i, {"loss": 1.0})
    lrs = np.asarray(test.lrs)
    assert len(lrs) == 78 and agent.stop_training
    np.testing.assert_allclose(lrs[1:] / lrs[:-1], (1.0 / 1e-4) ** (1 / 77), rtol=1e-12)
    assert abs(lrs[-1] / 1.0 - 1) < 1e-9
    assert agent.optimizer[0].param_groups[0]["lr"] == pytest.approx(1.0, rel=1e-9)


def test_windowed_normalisation_and_change_by_hand() -> None:
    r = [1.0, 3.0, 2.0, 6.0]
    z = windowed_normalize(r, 2)
    # windows: [1], [1,3], [3,2], [2,6]
    expected = [0.0, (3 - 2) / (1 + 1e-8), (2 - 2.5) / (0.5 + 1e-8), (6 - 4) / (2 + 1e-8)]
    np.testing.assert_allclose(z, expected)
    np.testing.assert_allclose(lagged_change([1.0, 4.0, 9.0, 16.0], 2), [0, 0, 4.0, 6.0])
    lrs = [1e-4, 1e-3, 1e-2, 1e-1]
    best, (low, high) = suggest_lr(lrs, [0.0, 1.0, 5.0, 5.5], n_skip_beginning=0, n_skip_end=0)
    assert best == 1e-2 and low == pytest.approx(1e-2 / 10 ** 0.5) and high == pytest.approx(1e-2 * 10 ** 0.5)


def test_plots_are_written(tmp_path) -> None:
    path = plot_curve([1e-4, 1e-3, 1e-2], [0.0, 1.0, 0.5], str(tmp_path / "c.png"), "lr", "reward")
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_lr_finder_python_api(backend, tmp_path) -> None:
    from note_rl.lr_finder import LRFinder

    agent = _dqn(backend)
    if backend == "torch":
        import torch

        agent.optimizer = torch.optim.Adam(agent.param)
    else:
        import tensorflow as tf

        agent.optimizer = tf.keras.optimizers.Adam()
    before = [w.copy() for w in agent.q_weights()]
    finder = LRFinder(agent)
    # per="episode" (Note_rl's default for the reward): one lr step per episode that trained
    out = finder.find(pool_network=False, N=30, window_size=3, start_lr=1e-4, end_lr=1, episodes=40,
                      study_dir=str(tmp_path / "lr"), study_name="lr")
    assert len(finder.lrs) == 31 and abs(finder.lrs[-1] - 1.0) < 1e-9
    assert len(finder.normalized) == len(finder.episode_lrs) >= 1
    assert 1e-4 <= out["suggested_lr"] <= 1.0 and out["interval"][0] < out["interval"][1]
    for png in (finder.plot_reward(), finder.plot_reward_change()):
        assert os.path.getsize(png) > 1000
    for w0, w1 in zip(before, agent.q_weights()):
        np.testing.assert_array_equal(w0, w1)  # the agent itself is untouched
    (study,) = _journal(tmp_path / "lr")
    trial = study.trials[0]
    assert trial.state == optuna.trial.TrialState.COMPLETE
    # intermediate values against the lr: step k is the lr's exponent, lr = start_lr * factor**k
    factor = (1.0 / 1e-4) ** (1 / 30)
    expected = {}
    for lr, value in zip(finder.episode_lrs, finder.normalized):
        expected.setdefault(round(np.log(lr / 1e-4) / np.log(factor)), value)
    assert trial.intermediate_values == pytest.approx(expected) and len(expected) > 1
    assert study.user_attrs["lr_finder_0"]["suggested_lr"] == out["suggested_lr"]


def _corridor_ppo(backend):
    import tests.note_rl.envs  # noqa: F401 - registers Corridor-v0

    agent = agents_module(backend).PPO(6, 32, 2, gamma=0.9, lam=0.9, n_steps=32, n_envs=4, n_epochs=4,
                                       env="Corridor-v0", seed=0)
    agent.set(policy=SoftmaxPolicy(), batch=64, seed=0)
    return agent


def test_opt_finder_picks_the_optimizer_that_learns(tmp_path) -> None:
    import torch

    from note_rl.opt_finder import OptFinder

    agent = _corridor_ppo("torch")
    params = agent.backend.flatten(agent.param)
    good, bad = torch.optim.Adam(params, lr=3e-3), torch.optim.SGD(params, lr=1e-9)
    finder = OptFinder(agent, [bad, good])
    best = finder.find(pool_network=False, episodes=150, study_dir=str(tmp_path / "opt"), study_name="opt")
    assert best is good and finder.best_index == 1
    assert finder.mean_rewards[1] > finder.mean_rewards[0] + 0.2
    digests = {row["initial_weights_sha256"] for row in finder.table}
    assert len(digests) == 1  # both candidates started from identical weights
    (study,) = _journal(tmp_path / "opt")
    assert [t.params["candidate"] for t in study.trials] == [0, 1]


def test_opt_finder_keras_agent(tmp_path) -> None:
    import keras

    from note_rl.opt_finder import OptFinder

    agent = _corridor_ppo("tf")
    finder = OptFinder(agent, [keras.optimizers.SGD(1e-9), keras.optimizers.Adam(3e-3)])
    best = finder.find(pool_network=False, episodes=150, study_dir=str(tmp_path / "optk"), study_name="optk")
    assert finder.best_index == 1 and best is finder.optimizers[1]
    assert len({row["initial_weights_sha256"] for row in finder.table}) == 1


def test_parallel_finder_runs_concurrently_and_picks_by_reward_and_loss(tmp_path) -> None:
    import torch

    import tests.note_rl.envs  # noqa: F401
    from note_rl.parallel_finder import ParallelFinder

    # rigged: CartPole pays ~10-40 per episode and has large TD errors, Corridor pays < 1 with tiny ones
    agents = [_dqn("torch", "Corridor-v0"), _dqn("torch", "CartPole-v1")]
    optimizers = [torch.optim.Adam(a.param, lr=1e-3) for a in agents]
    finder = ParallelFinder(agents, optimizers)
    logs = finder.find(pool_network=False, episodes=8, n_jobs=2, study_dir=str(tmp_path / "par"), study_name="par")
    assert logs["best_index"] == 1 and logs["best_opt"] is optimizers[1]
    assert logs["best_config"]["agent"] == "note_rl.agents.torch:DQN"
    assert logs["best_config"]["optimizer"]["cls"] == "torch.optim.adam:Adam"
    assert logs["best_config"]["optimizer"]["kwargs"]["lr"] == 1e-3
    assert logs["best_reward"] == pytest.approx(np.mean(logs["rewards"][1]))
    assert finder.rewards == logs["rewards"] and finder.losses == logs["losses"] and finder.episode == 8
    (s0, e0), (s1, e1) = logs["times"][0], logs["times"][1]
    assert s0 < e1 and s1 < e0  # the two trainings overlapped in time
    by_loss = ParallelFinder(agents, optimizers).find(pool_network=False, episodes=8, n_jobs=2, metrics="loss",
                                                      study_dir=str(tmp_path / "par_loss"), study_name="par_loss")
    assert by_loss["best_index"] == 0 and by_loss["best_loss"] < 1e9


# logger=none: finder studies log to wandb by default; these tests do not look at wandb
TINY = ["agent=dqn", "agent.hidden_size=[16]", "agent.batch=16", "agent.train_freq=1", "agent.num_updates=1",
        "agent.learning_starts=16", "buffer.pool_size=2000", "logger=none"]


def test_finders_from_the_config(tmp_path) -> None:
    run_app(["tuner=lr_finder", "tuner.N=20", "tuner.episodes=60", *TINY], cwd=str(tmp_path))
    lr_dir = tmp_path / "studies" / "lr_finder_dqn_CartPole-v1"
    result = json.loads((lr_dir / "lr_finder.json").read_text())
    assert len(result["lrs"]) == 21 and abs(result["lrs"][-1] - 1.0) < 1e-9
    override = (lr_dir / "lr_range.txt").read_text().strip()
    assert override.startswith('search.values.optimizer.lr="tag(log, interval(')
    for name in ("lr_reward.png", "lr_reward_change.png"):
        assert (lr_dir / name).stat().st_size > 1000
    # the one-line chain: a study searching the suggested interval
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.n_trials=1", "search=none", override.replace("search.values", "+search.values"),
             "budget.steps=200", *TINY], cwd=str(tmp_path))
    (study,) = _journal(tmp_path / "studies" / "dqn_CartPole-v1")
    low, high = json.loads((lr_dir / "lr_finder.json").read_text())["interval"]
    assert low * 0.99 <= study.trials[0].params["optimizer.lr"] <= high * 1.01

    # per=update with metrics=loss: the loss of every update against its lr
    run_app(["tuner=lr_finder", "backend=tf", "tuner.study_name=lr_tf", "tuner.per=update", "tuner.metrics=loss",
             "tuner.N=60", "tuner.episodes=30", *TINY], cwd=str(tmp_path))
    lr_tf = json.loads((tmp_path / "studies" / "lr_tf" / "lr_finder.json").read_text())
    assert len(lr_tf["lrs"]) == 61 and abs(lr_tf["lrs"][-1] - 1.0) < 1e-9 and len(lr_tf["losses"]) == 60
    assert (tmp_path / "studies" / "lr_tf" / "lr_loss.png").stat().st_size > 1000

    # 5 episodes store at least 40 steps, past TINY's learning_starts=32: every candidate trains
    run_app(["tuner=opt_finder", "tuner.optimizers=[adam,sgd]", "tuner.episodes=5", *TINY], cwd=str(tmp_path))
    opt = json.loads((tmp_path / "studies" / "opt_finder_dqn_CartPole-v1" / "opt_finder.json").read_text())
    assert [row["optimizer"] for row in opt["table"]] == ["adam", "sgd"] and opt["best_optimizer"] in ("adam", "sgd")

    run_app(["tuner=parallel_finder", "tuner.episodes=5", "tuner.candidates=[['backend=torch'],['backend=tf']]", *TINY],
            cwd=str(tmp_path))
    par = json.loads((tmp_path / "studies" / "parallel_finder_CartPole-v1" / "parallel_finder.json").read_text())
    assert par["best_index"] in (0, 1) and len(par["rewards"]) == 2
    # best_config: the best candidate's resolved config
    assert par["best_config"]["backend"]["name"] == ["torch", "tf"][par["best_index"]]
    assert par["best_config"]["agent"]["hidden_size"] == [16]
    (study,) = _journal(tmp_path / "studies" / "parallel_finder_CartPole-v1")
    assert sorted(t.params["label"] for t in study.trials) == ["backend=tf", "backend=torch"]


def run_command(name: str, args: list[str], cwd: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run console command ``name`` (pyproject's [project.scripts]) as installed in this venv."""
    exe = os.path.join(os.path.dirname(sys.executable), name)
    assert os.path.exists(exe), f"{name} is not installed next to {sys.executable} (pip install -e .)"
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), HYDRA_FULL_ERROR="0")
    out = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    if check:
        assert out.returncode == 0, f"{name} exited {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def test_note_opt_finder_command_tf_sqlite_storage_and_wandb_runs(tmp_path) -> None:
    # the default logger of finder studies is wandb (offline): no logger override here
    db = f"sqlite:///{tmp_path / 'finders.db'}"
    run_command("note-opt-finder", ["backend=tf", "tuner.study_name=opt_tf", "tuner.optimizers=[adam,sgd]",
                                    "tuner.episodes=2", "tuner.n_jobs=2", f"tuner.storage={db}",
                                    *[o for o in TINY if o != "logger=none"]], cwd=str(tmp_path))
    folder = tmp_path / "studies" / "opt_tf"
    opt = json.loads((folder / "opt_finder.json").read_text())
    assert [row["optimizer"] for row in opt["table"]] == ["adam", "sgd"] and not any(r["failed"] for r in opt["table"])
    # the results are in the storage, readable by anyone with optuna
    study = optuna.load_study(study_name="opt_tf", storage=db)
    trials = sorted(study.trials, key=lambda t: t.number)
    assert study.user_attrs["finder"] == "opt_finder" and study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert [t.params for t in trials] == [{"optimizer": "adam"}, {"optimizer": "sgd"}]
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * 2
    assert [t.value for t in trials] == pytest.approx([row["mean_reward"] for row in opt["table"]])
    assert all(len(t.intermediate_values) == 2 for t in trials)  # one report per episode
    for t in trials:
        assert json.loads(open(os.path.join(t.user_attrs["run_dir"], "result.json")).read())["config"]["backend"]["name"] == "tf"
        (path,) = offline_runs(t.user_attrs["run_dir"])
        run = read_run(path)
        assert run["run"]["job_type"] == "opt_finder" and run["run"]["run_group"] == "opt_tf"
        assert run["config"]["params"] == t.params and run["config"]["backend"]["name"] == "tf"
    assert (folder / "report" / "report.md").exists() and len(offline_runs(str(folder))) == 1  # + the study run


def test_note_parallel_finder_command_six_candidates_none_pruned_and_other_candidates_refused(tmp_path) -> None:
    # five CartPole candidates (returns ~10-40) and a Corridor one (returns < 1): with Optuna's default
    # MedianPruner the sixth trial would be pruned at its first report and counted as failed
    cands = [[f"seed={i}"] for i in range(5)] + [["env.id=Corridor-v0", "env.module=tests.note_rl.envs"]]
    cands[0].append("logger=wandb")  # one candidate logs to wandb (logger=none below, for speed)
    arg = "tuner.candidates=[" + ",".join("[" + ",".join(f"'{o}'" for o in c) + "]" for c in cands) + "]"
    common = ["tuner.study_name=p6", "tuner.episodes=2", "tuner.n_jobs=1", *TINY]
    run_command("note-parallel-finder", [*common, arg], cwd=str(tmp_path))
    folder = tmp_path / "studies" / "p6"
    par = json.loads((folder / "parallel_finder.json").read_text())
    assert par["failed"] == {} and all(len(par["rewards"][str(i)]) == 2 for i in range(6))
    assert par["best_index"] != 5 and max(par["rewards"]["5"]) < 1
    (study,) = _journal(folder)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 6
    (path,) = offline_runs(study.trials[0].user_attrs["run_dir"])
    run = read_run(path)
    assert run["run"]["job_type"] == "parallel_finder" and run["run"]["run_group"] == "p6"
    # the same study with another candidate: one line naming tuner.study_name, exit 2, study untouched
    out = run_command("note-parallel-finder", [*common, "tuner.candidates=[['seed=9']]"], cwd=str(tmp_path), check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("error: tuner.study_name: study 'p6' already holds trials of other candidates (label:")
    assert lines[0].endswith("new: seed=9); use another study name")
    (study,) = _journal(folder)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 6


def test_note_lr_finder_command(tmp_path) -> None:
    run_command("note-lr-finder", ["tuner.per=episode", "tuner.N=8", "tuner.episodes=12", "tuner.window_size=3",
                                   *TINY], cwd=str(tmp_path))
    result = json.loads((tmp_path / "studies" / "lr_finder_dqn_CartPole-v1" / "lr_finder.json").read_text())
    # every episode is recorded; the lr grew once per episode that trained, up to end_lr
    assert len(result["lrs"]) == 9 and len(result["normalized_rewards"]) >= 8 and 1e-4 <= result["suggested_lr"] <= 1.0


def test_a_rerun_reuses_the_study_choices_and_other_candidates_raise() -> None:
    from tuner.finders.runner import Candidate, CandidateMismatch, _distributions

    study = optuna.create_study()
    cands = [Candidate({"optimizer": name}, None) for name in ("adam", "sgd")]
    dists = _distributions(study, cands)
    study.enqueue_trial({"optimizer": "sgd"})
    study.tell(study.ask(dists), 1.0)
    # a subset of the earlier candidates: the study's own distribution, so Optuna accepts it
    assert _distributions(study, cands[1:]) == dists
    with pytest.raises(CandidateMismatch, match=r"\(optimizer: adam, sgd; new: rmsprop\)"):
        _distributions(study, [Candidate({"optimizer": "rmsprop"}, None)])
    assert len(study.trials) == 1


def test_opt_finder_by_loss_picks_the_lowest_mean_loss(tmp_path) -> None:
    import torch

    from note_rl.opt_finder import OptFinder

    agent = _dqn("torch")
    opts = [torch.optim.Adam(agent.param, lr=1e-3), torch.optim.SGD(agent.param, lr=1e-2),
            torch.optim.RMSprop(agent.param, lr=1e-3)]
    finder = OptFinder(agent, opts)
    best = finder.find(pool_network=False, episodes=3, metrics="loss", n_jobs=2, study_dir=str(tmp_path / "ol"),
                       study_name="ol")
    losses = finder.mean_losses
    assert all(v is not None for v in losses) and len(set(losses)) == 3
    assert finder.best_index == int(np.argmin(losses)) and best is opts[finder.best_index]
    assert finder.best_loss == min(losses)
    (study,) = _journal(tmp_path / "ol")
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    assert [t.value for t in sorted(study.trials, key=lambda t: t.number)] == pytest.approx(losses)
    assert study.best_trial.params["candidate"] == finder.best_index


def test_parallel_finder_keras_agents_and_results_in_the_storage(tmp_path) -> None:
    import keras

    from note_rl.parallel_finder import ParallelFinder

    agents = [_dqn("tf", seed=0), _dqn("tf", seed=1)]
    optimizers = [keras.optimizers.Adam(1e-3), keras.optimizers.SGD(1e-2)]
    logs = ParallelFinder(agents, optimizers).find(pool_network=False, episodes=2, n_jobs=2,
                                                   study_dir=str(tmp_path / "pk"), study_name="pk")
    assert logs["best_opt"] is optimizers[logs["best_index"]] and logs["failed"] == {}
    (study,) = _journal(tmp_path / "pk")
    trials = sorted(study.trials, key=lambda t: t.number)
    assert study.user_attrs["finder"] == "parallel_finder"
    assert [t.params for t in trials] == [{"candidate": 0, "label": "DQN/Adam(lr=0.001)"},
                                          {"candidate": 1, "label": "DQN/SGD(lr=0.01)"}]
    assert [t.value for t in trials] == pytest.approx([np.mean(logs["rewards"][i]) for i in range(2)])
    assert [len(t.intermediate_values) for t in trials] == [2, 2]
    assert logs["best_reward"] == pytest.approx(max(t.value for t in trials))


# -- meaningful finder results (issue: every episode at one lr; comparisons without training) -----
def test_per_episode_lr_grows_only_after_episodes_that_trained() -> None:
    import torch

    agent = _dqn("torch")
    agent.optimizer = torch.optim.Adam(agent.param)
    test = LRRangeTest(start_lr=1e-3, end_lr=1e-1, N=2, per="episode")
    test.set_model(agent)
    test.on_train_begin()
    test.on_episode_end(0, {"reward": 10.0})  # before learning starts: the lr stays
    test.on_episode_end(1, {"reward": 12.0})
    test.on_batch_end(0, {"loss": 1.0})
    test.on_episode_end(2, {"reward": 20.0})  # trained: one lr step
    test.on_episode_end(3, {"reward": 21.0})  # no gradient step since the last episode: stays
    test.on_batch_end(1, {"loss": 1.0})
    test.on_batch_end(2, {"loss": 1.0})
    test.on_episode_end(4, {"reward": 30.0})
    assert test.episode_lrs == pytest.approx([1e-3, 1e-3, 1e-3, 1e-2, 1e-2])
    assert test.episode_updates == [0, 0, 1, 1, 3] and test.lrs == pytest.approx([1e-3, 1e-2, 1e-1])
    assert agent.stop_training and agent.optimizer.param_groups[0]["lr"] == pytest.approx(1e-1)


def test_the_range_test_owns_the_lr_over_a_linear_decay_schedule() -> None:
    """DQN with linear_decay=True (the tuner's default) under an LR range test: every gradient step
    runs at the test's lr, start_lr * factor**k, not at the decayed one the schedule would set (and
    PPO's clip range stays at its start: the readme example below collapses at large lrs)."""
    import torch

    from note_rl.callbacks import Callback

    agent = _dqn("torch")
    agent.linear_decay = True
    agent.optimizer = torch.optim.Adam(agent.param, lr=1e-4)
    test = LRRangeTest(start_lr=1e-4, end_lr=1e-2, N=40)
    seen = []

    class Watch(Callback):  # after the range test in the list: the lr the step just ran at, and its k
        def on_batch_end(self, batch, logs=None):
            seen.append(agent.optimizer.param_groups[0]["lr"])

    agent.train(agent.optimizer, episodes=50, steps=400, callbacks=[Watch(), test], p=0)
    assert len(seen) >= 40
    # the step k ran at start_lr * factor**k; the schedule would have set 1e-4 * progress_remaining
    assert seen[:40] == pytest.approx([1e-4 * test.factor ** k for k in range(40)])


def test_reward_curve_and_collapse_by_hand() -> None:
    from tuner.finders.lr import before_collapse
    from tuner.logs.curves import reward_curve

    levels, curve = reward_curve([1, 1, 2, 3, 3, 4], [10, 20, 30, 40, 60, 80], smooth=3)
    assert levels.tolist() == [1, 2, 3, 4]
    # means per lr 15, 30, 50, 80; centred windows of 3 (2 at the ends)
    assert curve == pytest.approx([22.5, 95 / 3, 160 / 3, 65])
    # rises to 100, then falls below halfway between the start (10) and the best (100): 55
    assert before_collapse([10, 12, 40, 100, 60, 50, 200]) == 5
    assert before_collapse([30, 29, 31, 90, 95]) == 5  # start-up noise is not a collapse
    assert before_collapse([5, 5, 5]) == 3


def test_lr_curve_from_too_few_lrs_is_refused(tmp_path) -> None:
    from tuner.finders.lr import LRFinder

    n = 30  # 30 episodes, trained from episode 10 on, all at 2 learning rates (per=update, one round)
    np.savez(tmp_path / "finder.npz", lrs=np.geomspace(1e-4, 1, 78), rewards=np.arange(n, dtype=float),
             normalized=np.zeros(n), losses=np.zeros(n), step_losses=np.zeros(77),
             episode_lrs=np.r_[np.full(12, 1e-4), np.full(18, 1.0)],
             episode_updates=np.r_[np.zeros(10), np.full(20, 77)])
    with pytest.raises(ValueError, match=r"^per: the trained episodes saw only 2 learning rates: the N=77 lr steps"):
        LRFinder(None).load(str(tmp_path), "reward", finder={"N": 77, "per": "update", "episodes": 30})
    with pytest.raises(ValueError, match=r"^episodes: only 2 learning rates were tried before 30 episodes ran out"):
        LRFinder(None).load(str(tmp_path), "reward", finder={"N": 77, "per": "episode", "episodes": 30})


def test_candidates_without_a_gradient_step_are_not_compared() -> None:
    from tuner.finders.parallel import drop_untrained

    trials = [optuna.trial.create_trial(value=v, user_attrs={"gradient_steps": g}) for v, g in ((50, 0), (20, 8))]
    with pytest.warns(UserWarning, match=r"candidates \[0\] made no gradient step"):
        kept, idle = drop_untrained(trials, {0: 50.0, 1: 20.0})
    assert kept == {1: 20.0} and idle == [0]
    with pytest.raises(ValueError, match=r"^episodes: no candidate made a gradient step"):
        drop_untrained(trials[:1], {0: 50.0})


def test_finder_settings_without_a_curve_are_one_line_exit_2(tmp_path) -> None:
    # DQN training rounds of 77 updates: per=update spends all 77 lr steps in the first round
    out = run_app(["tuner=lr_finder", "tuner.per=update", "tuner.episodes=12", *TINY, "agent.train_freq=64",
                   "agent.num_updates=77", "agent.learning_starts=32"], cwd=str(tmp_path), check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(
        "error: tuner.per: the trained episodes saw only "), out.stderr[-2000:]
    # an OptFinder whose candidates never train (learning starts after the budget): refused
    out = run_app(["tuner=opt_finder", "tuner.optimizers=[adam,sgd]", "tuner.episodes=2", *TINY,
                   "agent.learning_starts=1000"], cwd=str(tmp_path), check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(
        "error: tuner.episodes: no candidate made a gradient step"), out.stderr[-2000:]


def readme_finder_command(tuner: str) -> list[str]:
    """The arguments of the ``note-tune tuner=<tuner> ...`` example of the Finders page
    (docs/guide/finders.md, once README's section "Finders"), as a shell would pass them."""
    import shlex

    with open(os.path.join(REPO, "docs", "guide", "finders.md"), encoding="utf-8") as f:
        (line,) = [line for line in f if line.startswith(f"note-tune tuner={tuner} ")]
    return shlex.split(line)[1:]


def _trials(folder) -> list:
    (study,) = _journal(folder)
    return sorted(study.trials, key=lambda t: t.number)


@pytest.mark.slow
def test_readme_lr_finder_example_suggests_a_range(tmp_path) -> None:
    """The Finders page's LR finder example as written (PPO on CartPole, N=77 from 1e-4 to 1; 13-17 s here): the
    reward curve rises and collapses, and the suggestion is an interval on its rise, in the range where
    Adam-trained PPO learns CartPole.  One seed's run is not the same on every CPU (the kernels' float
    rounding differs, and an RL run amplifies it): seed 0 suggested 1.06e-2 on one Xeon and 1.77e-3 on
    another (the page gives both), so the value is checked against that range, not one machine's digits
    (8.6e-4 before the range test owned the lr and clip schedules)."""
    from tuner.logs.curves import reward_curve

    run_app(readme_finder_command("lr_finder"), cwd=str(tmp_path))
    folder = tmp_path / "studies" / "lr_finder_ppo_CartPole-v1"
    result = json.loads((folder / "lr_finder.json").read_text())
    low, high = result["interval"]
    assert 1e-4 <= low < result["suggested_lr"] < high <= 1 and high / low > 3
    assert 5e-4 <= result["suggested_lr"] <= 3e-2
    assert len(set(result["episode_lrs"])) >= 70 and abs(result["lrs"][-1] - 1) < 1e-9
    (trial,) = _trials(folder)
    data = np.load(os.path.join(trial.user_attrs["run_dir"], "finder.npz"))
    levels, curve = reward_curve(data["episode_lrs"], data["rewards"], smooth=7)
    peak = int(np.argmax(curve))
    assert curve[0] < 50 and curve[peak] > 100 and curve[peak:].min() < 50  # rises, then collapses
    assert levels[0] < result["suggested_lr"] <= levels[peak]  # the suggestion is on the rise
    for name in ("lr_reward.png", "lr_reward_change.png", "report/lr_finder.png"):
        assert (folder / name).stat().st_size > 10_000


@pytest.mark.slow
def test_readme_opt_finder_example_names_the_optimizer_that_learns(tmp_path) -> None:
    """The Finders page's OptFinder example as written (PPO, adam/adamw/sgd, 100 episodes each; ~25 s here):
    every candidate trains, and the best is clearly above a random policy (~20 on CartPole)."""
    run_app(readme_finder_command("opt_finder"), cwd=str(tmp_path))
    folder = tmp_path / "studies" / "opt_finder_ppo_CartPole-v1"
    opt = json.loads((folder / "opt_finder.json").read_text())
    table = {row["optimizer"]: row for row in opt["table"]}
    assert list(table) == ["adam", "adamw", "sgd"] and not any(row["failed"] for row in opt["table"])
    assert all(t.user_attrs["gradient_steps"] > 0 for t in _trials(folder))
    assert opt["best_optimizer"] == max(table, key=lambda name: table[name]["mean_reward"])
    assert opt["best_reward"] > 50 and opt["best_optimizer"] != "sgd"


@pytest.mark.slow
def test_readme_parallel_finder_example_names_the_candidate_that_learns(tmp_path) -> None:
    """The Finders page's ParallelFinder example as written (DQN+Adam, PPO+Adam, PPO+SGD, 100 episodes each;
    ~23 s here): every candidate trains, and PPO+Adam wins clearly above a random policy."""
    run_app(readme_finder_command("parallel_finder"), cwd=str(tmp_path))
    folder = tmp_path / "studies" / "parallel_finder_CartPole-v1"
    par = json.loads((folder / "parallel_finder.json").read_text())
    assert par["failed"] == {} and par["no_gradient_steps"] == []
    assert all(t.user_attrs["gradient_steps"] > 0 for t in _trials(folder))
    means = {int(i): np.mean(r) for i, r in par["rewards"].items()}
    assert par["best_index"] == max(means, key=means.get) == 1
    assert par["best_opt"] == ["agent=ppo", "optimizer=adam"] and par["best_reward"] > 50


def test_finder_strategy_refusals_are_one_line() -> None:
    """strategy= takes a MirroredStrategy for a Keras agent (tested in tests/note_rl/backends/test_distributed_tf.py)."""
    import tensorflow as tf

    from note_rl.agents.keras import DQN as KerasDQN
    from note_rl.agents.torch import DQN as TorchDQN
    from tuner.finders.common import strategy_spec

    assert strategy_spec(TorchDQN(4, 8, 2), None, "LRFinder") is None
    with pytest.raises(ValueError, match=r"^LRFinder.find\(strategy=_DefaultDistributionStrategy\): strategy= is for "
                                         "Keras agents"):
        strategy_spec(TorchDQN(4, 8, 2), tf.distribute.get_strategy(), "LRFinder")
    with pytest.raises(ValueError, match=r"^OptFinder.find\(strategy=_DefaultDistributionStrategy\): a finder trains "
                                         "each candidate in one fresh process, so it takes a MirroredStrategy"):
        strategy_spec(KerasDQN(4, 8, 2), tf.distribute.get_strategy(), "OptFinder")
