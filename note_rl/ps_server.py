"""A parameter server or worker of a ``ParameterServerStrategy`` cluster, for the coordinator that
runs ``distributed_training`` (or ``note-tune strategy=parameter_server``)::

    TF_CONFIG='{"cluster": {...}, "task": {"type": "ps", "index": 0}}' python -m note_rl.ps_server

It reads its job and index from ``TF_CONFIG`` (or ``--job``/``--index`` with ``--cluster JSON``)
and serves until killed.
"""

from __future__ import annotations

import argparse
import json
import os


#: inter-op threads a task of a cluster strategy needs at the least
MIN_INTER_OP_THREADS = 2


def ensure_inter_op_threads() -> None:
    """Raise TensorFlow's inter-op threads to :data:`MIN_INTER_OP_THREADS` when the environment asks
    for fewer (a busy machine's thread limit exports 1).  A worker's step holds an inter-op thread
    while it waits for variables from a parameter server or for a collective; with a single thread
    the receive that would wake it can never run, and the step waits forever.  Call it before
    TensorFlow starts its runtime; afterwards it changes the environment only."""
    n = os.environ.get("TF_NUM_INTEROP_THREADS")
    if n is not None and n.isdigit() and 0 < int(n) < MIN_INTER_OP_THREADS:
        os.environ["TF_NUM_INTEROP_THREADS"] = str(MIN_INTER_OP_THREADS)
    import sys

    tf = sys.modules.get("tensorflow")
    if tf is None:
        return
    current = tf.config.threading.get_inter_op_parallelism_threads()
    if 0 < current < MIN_INTER_OP_THREADS:
        try:
            tf.config.threading.set_inter_op_parallelism_threads(MIN_INTER_OP_THREADS)
        except RuntimeError:  # the runtime has started: too late, the environment covers new processes
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", help="the cluster as JSON (default: TF_CONFIG's)")
    parser.add_argument("--job", help="ps or worker (default: TF_CONFIG's task type)")
    parser.add_argument("--index", type=int, help="task index (default: TF_CONFIG's)")
    args = parser.parse_args(argv)
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = json.loads(args.cluster) if args.cluster else config.get("cluster")
    task = config.get("task") or {}
    job = args.job or task.get("type")
    index = args.index if args.index is not None else task.get("index", 0)
    if not cluster or job not in ("ps", "worker"):
        parser.error("give the cluster and a ps or worker task (TF_CONFIG, or --cluster/--job/--index)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    ensure_inter_op_threads()
    import tensorflow as tf

    tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=int(index), protocol="grpc",
                         start=True).join()


if __name__ == "__main__":
    main()
