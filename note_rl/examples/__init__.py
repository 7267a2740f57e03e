"""Note_rl's example agents under the import paths the seed documents use.

``from Note_rl.examples.keras.DQN import DQN`` becomes ``from note_rl.examples.keras.DQN import DQN``
(and ``Note_rl.examples.pytorch.X`` becomes ``note_rl.examples.pytorch.X``); each module re-exports
the matching built-in agent of :mod:`note_rl.agents.keras` / :mod:`note_rl.agents.torch`:

======================================  =================================================
seed module                             built-in agent
======================================  =================================================
``DQN.DQN``                             ``DQN``
``PPO.PPO`` (keras)                     ``PPO``
``DDPG_HER.DDPG``                       ``DDPG`` on a goal env by default (see below)
``MADDPG.DDPG``                         ``MADDPG`` (Note_rl named its MADDPG class ``DDPG``)
``pool_network.DQN.DQN``                ``DQN`` (``processes=N``; ``train(pool_network=True)``)
``pool_network.DQN_pr.DQN`` (keras)     ``DQN`` (``set(PR=True)``; ``train(processes_pr=N)``)
``pool_network.DDPG_HER.DDPG``          as ``DDPG_HER.DDPG``
======================================  =================================================

Note_rl's pool-network classes differ from the plain ones only by building one env per process;
the built-in agents do that themselves when ``train(pool_network=True, processes=N)`` runs, so
both paths name the same class.  Note_rl's ``DDPG_HER`` example carries its own goal env (a point
moved to a target, reward -1 until within 0.15); its counterpart here defaults ``env`` to
:class:`note_rl.goal_envs.PointReachEnv`, so ``set(HER=True)`` runs as the seeds write it.

Importing this package, or ``note_rl.examples.keras`` / ``note_rl.examples.pytorch``, imports no
framework: each agent module imports its backend when it is imported itself.
"""

#: default env of the ``DDPG_HER`` classes (Note_rl's example has its own 2-D goal env)
GOAL_ENV = "note_rl/PointReach-v0"
