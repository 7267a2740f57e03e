"""Contract test: every API name that Note_rl's seed documents give is accepted by note_rl.

The lists below were TRANSCRIBED BY HAND from the four seed documents in /work/shared/seeds/
(000_926acde591c0a1f0.txt, 001_f3d8f02065c4b18d.txt, 002_9a1c502cf4e7554b.txt,
003_967376d90808652a.txt; 004 is another library).  The test parses nothing at run time.
Each value names the seed versions that document the name; comments give "version:line".

A name counts as accepted when ``inspect.signature`` shows a POSITIONAL_OR_KEYWORD or KEYWORD_ONLY
parameter of that name (``**kwargs`` does not count), or, for attributes and methods, when it
exists on a bare instance / the class / the module.  Nothing is trained or built beyond that.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib

import pytest

ALL = "000, 001, 002, 003"
V023 = "000, 002, 003"

# -- RL.set / RL_pytorch.set (000:27-48 table, 001:451-466 signature, 002/003 snippets) -----------
SET = {
    "policy": ALL, "noise": ALL, "pool_size": ALL, "batch": ALL, "update_batches": ALL,
    "update_steps": ALL, "trial_count": ALL, "criterion": ALL, "PPO": ALL, "HER": ALL, "PR": ALL,
    "initial_TD": ALL, "alpha": ALL,
    "num_updates": "000", "num_steps": "000", "initial_ratio": "000", "lambda_": "000",
    "TRL": "000",  # 000:41 "Trajectory-based Reinforcement Learning (custom triplet sampling)"
    "IRL": "000",  # 000:44
    # the multi-agent flag: MARL in 000:42 and the 002/003 snippets, MA in 001:462 and its snippets
    "MARL": V023, "MA": "001",
    "epsilon": "001",  # 001:464, 509: the eps of an eps-greedy policy
}

# -- RL.train (Keras; 000:74-95 table, 001:546-566, 002:302-317, 003:452-468) --------------------
TRAIN = {
    "train_loss": ALL, "optimizer": ALL, "episodes": ALL, "pool_network": ALL, "processes": ALL,
    "processes_her": ALL, "processes_pr": ALL, "jit_compile": ALL, "p": ALL,
    "window_size": V023, "clearing_freq": V023, "window_size_": V023, "window_size_ppo": V023,
    "random": V023, "save_data": V023,
    "parallel_store_and_training": "000", "parallel_training_and_save": "000", "num_store": "000",
    "window_size_pr": "000", "callbacks": "000",  # 002/003 only say "registered callbacks"
    "shuffle": "001",  # 001:564 (002:348 / 003:500 describe shuffling, not a parameter)
}

# -- RL_pytorch.train: no table; names from the PyTorch snippets (000:471-594, 001:141-224,
# 002:84-144, 003:142-218).  001:224 / 002:144 / 003:218 pass ``train_loss`` first to a PyTorch
# agent, against every other PyTorch snippet: treated as a doc slip, not required here.
# Every other Keras train() name is accepted too: the two backends share one set of options.
TORCH_TRAIN = {"optimizer": ALL, "episodes": ALL, "pool_network": ALL, "processes": ALL,
               "processes_her": ALL, **{k: v for k, v in TRAIN.items() if k != "train_loss"}}

# -- RL.distributed_training (000:119-126 "all parameters from train() plus", 001:612-636,
# 002:398-413, 003:546-563).  Positional forms disagree: 001 (global_batch_size, optimizer,
# strategy, episodes); 002/003 (optimizer, strategy, episodes), except their first snippet
# (002:155, 003:236) which keeps 001's GLOBAL_BATCH_SIZE first.  So only names are checked.
DISTRIBUTED = {
    "optimizer": ALL, "strategy": ALL, "episodes": ALL,
    "num_episodes": ALL,  # episode count for MultiWorkerMirroredStrategy / ParameterServerStrategy
    "pool_network": ALL, "processes": ALL, "processes_her": ALL, "processes_pr": ALL,
    "jit_compile": ALL, "p": ALL,
    "window_size": V023, "clearing_freq": V023, "window_size_": V023, "window_size_ppo": V023,
    "random": V023, "save_data": V023,
    "train_loss": "000", "parallel_store_and_training": "000", "parallel_training_and_save": "000",
    "num_store": "000", "window_size_pr": "000", "callbacks": "000",  # "all parameters from train()"
    "global_batch_size": "001", "shuffle": "001",  # 001:614, 634
}

# -- adjusters (RL methods; RL_pytorch inherits the same) ----------------------------------------
# The EMA coefficient is ``smooth`` in 000 (000:187, 197, 201) and ``smooth_alpha`` in 002/003;
# 000's adjust_window_size takes a pre-computed ``ema`` (000:164, 174), 003's takes smooth_alpha.
ADJUST_WINDOW_SIZE = {"p": "000, 003", "scale": "000, 003", "ema": "000", "smooth_alpha": "003"}
_P002 = {k: "002" for k in ("lr_params", "freq_params", "weight_decay_params", "beta1_params",
                            "beta2_params")}
_P_BOTH = {k: "000, 002" for k in ("batch_params", "alpha_params", "eps_params", "tau_params",
                                   "gamma_params", "clip_params")}
# 000:198 says adabatch's *_params are "Same as in adjust_batch_size": hence 000 on these
ADJUST_BATCH_SIZE = {"smooth_alpha": "002", "target_ess": "002", "store_params": "002",
                     "beta_params": "000", **_P_BOTH, **_P002}                    # 002:461-490
ADABATCH = {"num_samples": "000, 002", "target_noise": "000, 002", "smooth": "000",
            "smooth_alpha": "002", "beta_params": "000", "jit_compile": "000, 002",
            **_P_BOTH, **_P002}                                                   # 000:187, 002:513-544
ADJUST = {"target_ess": "000, 002", "target_noise": "000, 002", "num_samples": "000, 002",
          "smooth": "000", "smooth_alpha": "002", "batch_params": "000, 002",
          "alpha_params": "000, 002", "jit_compile": "000, 002", "store_params": "002",
          **{k: "002" for k in ("eps_params", "tau_params", "gamma_params", "clip_params")},
          **_P002}                                            # 000:201 (elided "..."), 002:563-599

# -- finders (000:922-1185, 002:619-820, 003:677-937; 001 has none) ------------------------------
LR_FIND = {k: V023 for k in ("train_loss", "pool_network", "N", "window_size", "start_lr", "end_lr",
                             "episodes", "strategy")}
OPT_FIND = {k: V023 for k in ("train_loss", "pool_network", "episodes", "strategy")}
PAR_FIND = {k: V023 for k in ("train_loss", "pool_network", "processes", "processes_her",
                              "processes_pr", "strategy", "episodes", "metrics", "jit_compile")}
PAR_CALLBACK = {k: V023 for k in ("episode", "logs", "agent", "lock")}  # 000:1068, 1087

# -- built-in agents: the seed example classes map to note_rl.agents.{keras,torch} --------------
# examples.*.DQN and pool_network.DQN(_pr) -> DQN; PPO -> PPO; DDPG_HER.DDPG and
# pool_network.DDPG_HER.DDPG -> DDPG; MADDPG.DDPG -> MADDPG.  000 uses keywords (000:227, 311,
# 337, 364, 390, 411); 001-003 the positional forms in POSITIONAL below.
AGENTS = {
    "DQN": {"state_dim": "000", "hidden_size": "000", "action_dim": "000",
            "processes": "000",  # 000:390 pool_network DQN(..., processes=7)
            # 001:524 DQN(state_dim=4, hidden_dim=128, action_dim=2); 000's built-in says hidden_size
            # (000:818 uses hidden_dim too, but for the user-written DQN of its custom-agent tutorial)
            "hidden_dim": "001"},
    "PPO": {k: "000" for k in ("state_dim", "hidden_size", "action_dim", "clip", "entropy_coef")},
    "DDPG": {k: "000" for k in ("hidden_size", "tau", "gamma", "lr", "processes")},
    "MADDPG": {k: "000" for k in ("hidden_size", "tau", "gamma", "lr")},
}

# -- policies and noise (001:687-965; ``rl.X`` in 000/001 is ``Note.RL.rl``, which 002/003 replace
# by ``Note_rl.policy`` / ``Note_rl.noise``) ----------------------------------------------------
POLICY_NOISE = {
    "policy.EpsGreedyQPolicy": {"eps": "000, 001", "epsilon": "001"},  # 000:229, 001:719; 001:528
    "policy.BoltzmannQPolicy": {"tau": "001", "clip": "001"},
    "policy.MaxBoltzmannQPolicy": {"eps": "001", "tau": "001", "clip": "001"},
    "policy.BoltzmannGumbelQPolicy": {"C": "001"},
    "policy.GumbelSoftmaxPolicy": {"temperature": "001", "eps": "001"},
    "policy.SoftmaxPolicy.select_action": {"nb_actions": "001", "probs": "001"},
    "policy.EpsGreedyQPolicy.select_action": {"q_values": "001"},
    "policy.GreedyQPolicy.select_action": {"q_values": "001"},
    "policy.BoltzmannQPolicy.select_action": {"q_values": "001"},
    "policy.MaxBoltzmannQPolicy.select_action": {"q_values": "001"},
    "policy.BoltzmannGumbelQPolicy.select_action": {"q_values": "001", "step_counter": "001"},
    "policy.GumbelSoftmaxPolicy.onehot_from_logits": {"logits": "001"},
    "policy.GumbelSoftmaxPolicy.sample_gumbel": {"shape": "001", "eps": "001"},
    "policy.GumbelSoftmaxPolicy.gumbel_softmax_sample": {"logits": "001"},
    "policy.GumbelSoftmaxPolicy.gumbel_softmax": {"logits": "001"},
    "noise.GaussianWhiteNoiseProcess": {k: "001" for k in ("mu", "sigma", "sigma_min",
                                                           "n_steps_annealing", "size")},
    "noise.OrnsteinUhlenbeckProcess": {k: "001" for k in ("theta", "mu", "sigma", "dt", "size",
                                                          "sigma_min", "n_steps_annealing")},
}

PARAMS: dict[str, dict[str, str]] = {
    **{f"{cls}.set": SET for cls in ("RL", "RL_pytorch")},
    "RL.train": TRAIN, "RL_pytorch.train": TORCH_TRAIN, "RL.distributed_training": DISTRIBUTED,
    **{f"{cls}.{m}": d for cls in ("RL", "RL_pytorch") for m, d in (
        ("adjust_window_size", ADJUST_WINDOW_SIZE), ("adjust_batch_size", ADJUST_BATCH_SIZE),
        ("adabatch", ADABATCH), ("adjust", ADJUST),
        ("animate_agent", {"max_steps": "000"}))},  # 000:735, 910 animate_agent(max_steps=200)
    "LRFinder": {"agent": V023}, "LRFinder.find": LR_FIND,
    "LRFinder.plot_reward": {"n_skip_beginning": V023, "n_skip_end": V023},       # 000:976
    "LRFinder.plot_reward_change": {k: V023 for k in ("sma", "n_skip_beginning", "n_skip_end",
                                                      "y_lim")},                   # 000:983
    "OptFinder": {"agent": V023, "optimizers": V023}, "OptFinder.find": OPT_FIND,
    "ParallelFinder": {"agents": V023, "optimizers": V023}, "ParallelFinder.find": PAR_FIND,
    "ParallelFinder.on_episode_end": PAR_CALLBACK, "ParallelFinder.on_episode_end_": PAR_CALLBACK,
    **{f"{b}.{a}": d for b in ("keras", "torch") for a, d in AGENTS.items()},
    **POLICY_NOISE,
}

# Positional forms used by snippets: the first parameters must have these names, in this order.
POSITIONAL = {
    # 000 passes these by keyword; 001-003: model.train(train_loss, optimizer, 100) / (optimizer, 100)
    "RL.train": (("train_loss", "optimizer", "episodes"), "001, 002, 003"),
    "RL_pytorch.train": (("optimizer", "episodes"), "001, 002, 003"),
    **{f"{b}.PPO": (("state_dim", "hidden_size", "action_dim", "clip", "entropy_coef"),
                    "001, 002, 003") for b in ("keras", "torch")},      # PPO(4,128,2,0.7,0.7)
    # DQN(4,128,2,7) (7 = processes, 000:390 names it), DDPG(128,0.1,0.98,0.005[,7]) and the MADDPG
    # module's DDPG(128,0.1,0.98,0.005) (000:337, 364, 411 name them hidden_size, tau, gamma, lr,
    # processes) are recognised by their values, not their slots (the built-in agents' slots differ):
    # test_seed_api.py calls them (test_processes_constructor_argument_both_forms,
    # test_ddpg_positional_form_of_seed_001, test_maddpg_positional_form)
    "policy.EpsGreedyQPolicy": (("eps",), "001, 002, 003"),             # EpsGreedyQPolicy(0.01)
    "LRFinder": (("agent",), V023), "LRFinder.find": (("train_loss",), V023),
    "OptFinder": (("agent", "optimizers"), V023), "OptFinder.find": (("train_loss",), V023),
    "ParallelFinder": (("agents", "optimizers"), V023),
}

# Attributes and methods that must exist on a bare instance (or module).
_AGENT_ATTRS = {
    "path": ALL, "save_freq": ALL, "max_save_files": ALL, "save_param_only": ALL,
    "save_best_only": ALL, "trial_count": "002, 003", "criterion": "001, 002, 003",
    "param": ALL,        # torch.optim.Adam(model.param)
    "optimizer": V023,   # agent.optimizer = ... before LRFinder (000:929)
    "env": "000",        # 000:771 custom agent sets self.env
    "stop_training": "002, 003", "loss_list": "001, 002, 003", "total_episode": "002, 003",
    "visualize_loss": ALL, "visualize_reward": ALL, "visualize_reward_loss": ALL,
    "animate_agent": ALL, "save": ALL, "save_param": ALL, "restore": V023,
    "restore_param": "002, 003", "update_param": V023,
    "compute_ess_from_weights": "003",  # 003:640
}
ATTRS = {
    # the seeds document distributed_training on RL (tf.distribute strategies); RL_pytorch has one too
    # (torch DDP, no strategy argument), which the seeds do not list
    "RL": {**_AGENT_ATTRS, "distributed_training": ALL},
    "RL_pytorch": _AGENT_ATTRS,
    # 000:1019-1050 key attributes (``episode``: the total set by find(); 000:1122 calls it
    # ``self.episodes`` once, the attribute list and on_episode_end say ``episode``)
    "ParallelFinder": {k: V023 for k in ("agents", "optimizers", "rewards", "losses", "logs", "lock",
                                         "episode", "on_episode_end", "on_episode_end_")},
    "note_rl": {"restore_param": "002, 003"},  # 002:294 / 003:429 param = nn.restore_param('param.dat')
    "note_rl.policy": {"SoftmaxPolicy": ALL, "EpsGreedyQPolicy": ALL, "GreedyQPolicy": "001",
                       "BoltzmannQPolicy": "001", "MaxBoltzmannQPolicy": "001",
                       "BoltzmannGumbelQPolicy": "001", "GumbelSoftmaxPolicy": "001"},
    "note_rl.noise": {"GaussianWhiteNoiseProcess": ALL, "OrnsteinUhlenbeckProcess": "001"},
    "noise.GaussianWhiteNoiseProcess": {"sample": "001"},
    "noise.OrnsteinUhlenbeckProcess": {"sample": "001", "reset_states": "001"},
}

# Hooks a user subclass defines and the library looks up by name (window_size_fn: 002:368, 003:517;
# window_size_func: 000:180; adjust_func: 000:162; reward_done_func: 000:862; _ma: 000:887).
HOOKS = {"window_size_fn": "002, 003", "window_size_func": "000", "adjust_func": "000",
         "reward_done_func": "000", "reward_done_func_ma": "000"}

# -- resolution ------------------------------------------------------------------------------------
MODULES = {"RL": ("note_rl.keras", "RL"), "RL_pytorch": ("note_rl.torch", "RL_pytorch"),
           "LRFinder": ("note_rl.lr_finder", "LRFinder"), "OptFinder": ("note_rl.opt_finder", "OptFinder"),
           "ParallelFinder": ("note_rl.parallel_finder", "ParallelFinder"),
           "keras": ("note_rl.agents.keras", None), "torch": ("note_rl.agents.torch", None),
           "policy": ("note_rl.policy", None), "noise": ("note_rl.noise", None)}


def _resolve(api: str):
    """``"RL.set"`` -> the function, ``"keras.DQN"`` -> the class, ``"LRFinder"`` -> the class."""
    head, *rest = api.split(".")
    module, attr = MODULES[head]
    obj = importlib.import_module(module)
    for part in ([attr] if attr else []) + rest:
        if not hasattr(obj, part):
            pytest.fail(f"{api}: {getattr(obj, '__name__', obj)!s} has no attribute {part!r}")
        obj = getattr(obj, part)
    return obj


def _params(api: str) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(_resolve(api)).parameters.values() if p.name != "self"]


def _owner(key: str):
    if key in ("RL", "RL_pytorch"):
        return _resolve(key)()
    if key == "ParallelFinder":
        return _resolve(key)([], [])
    if key.startswith("note_rl"):
        return importlib.import_module(key)
    return _resolve(key)


def _cases(table: dict[str, dict[str, str]]) -> list:
    return [pytest.param(owner, name, versions, id=f"{owner}:{name}")
            for owner, names in table.items() for name, versions in names.items()]


NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@pytest.mark.parametrize("api, name, versions", _cases(PARAMS))
def test_parameter_is_accepted(api: str, name: str, versions: str) -> None:
    found = {p.name: p.kind for p in _params(api)}
    assert found.get(name) in NAMED, (
        f"{api} takes no keyword {name!r} (seed {versions}); it has {list(found)}")


@pytest.mark.parametrize("api", list(POSITIONAL))
def test_positional_order(api: str) -> None:
    names, versions = POSITIONAL[api]
    got = tuple(p.name for p in _params(api)
                if p.kind in (inspect.Parameter.POSITIONAL_ONLY, *NAMED))[:len(names)]
    assert got == names, f"{api}: positional slots {got}, seed {versions} call it as {names}"


@pytest.mark.parametrize("owner, name, versions", _cases(ATTRS))
def test_attribute_exists(owner: str, name: str, versions: str) -> None:
    assert hasattr(_owner(owner), name), f"{owner} has no attribute {name!r} (seed {versions})"


@pytest.mark.parametrize("key", ["best_reward", "best_loss"])
def test_parallel_finder_logs_keys(key: str) -> None:
    # 000:1039-1042: logs starts with best_reward = -1e9 and best_loss = 1e9
    assert key in _owner("ParallelFinder").logs


@pytest.mark.parametrize("name, versions", list(HOOKS.items()), ids=list(HOOKS))
def test_hook_is_looked_up(name: str, versions: str) -> None:
    # a hook is only ever found by its name as a string (getattr(agent, "<name>", None)), so the
    # check is that note_rl's source holds that string; behaviour is covered by the feature tests
    root = pathlib.Path(importlib.import_module("note_rl").__file__).parent
    quoted = (f'"{name}"', f"'{name}'")
    assert any(q in f.read_text() for f in root.rglob("*.py") for q in quoted), (
        f"note_rl never looks up the agent hook {name!r} (seed {versions})")
