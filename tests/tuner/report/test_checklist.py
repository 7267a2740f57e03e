"""The AutoRL checklist's budget line counts the env steps trials trained (tuner/report/checklist.py)."""

import optuna

from tuner.report.checklist import checklist, trained_steps


def _study(rows: list[dict]) -> optuna.Study:
    study = optuna.create_study()
    for attrs in rows:
        trial = study.ask()
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        study.tell(trial, 0.0)
    return study


def test_plain_trials_count_their_steps() -> None:
    study = _study([{"env_steps": 1000}, {"env_steps": 2500}, {}])
    assert trained_steps(study.trials) == 3500


def test_a_pbt_segment_counts_only_the_steps_past_its_parents_checkpoint() -> None:
    """Two members, two generations of 65,536 steps (PPO rounds a 50,000-step interval up to whole
    rollouts); in generation 1 member 1 copied member 0 (exploit), so its parent is trial 0.  Each
    segment records the step counter it ended at (131,072 in generation 1); trained: 4 x 65,536."""
    study = _study([
        {"pbt_member": 0, "pbt_generation": 0, "env_steps": 65536},
        {"pbt_member": 1, "pbt_generation": 0, "env_steps": 65536},
        {"pbt_member": 0, "pbt_generation": 1, "pbt_parent_trial": 0, "env_steps": 131072},
        {"pbt_member": 1, "pbt_generation": 1, "pbt_parent_trial": 0, "env_steps": 131072},
    ])
    assert trained_steps(study.trials) == 4 * 65536
    (line,) = [x for x in checklist(study) if x.startswith("- budget:")]
    assert line.endswith("; 262144 env steps in trials")
