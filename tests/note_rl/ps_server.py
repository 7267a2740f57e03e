"""A ``tf.distribute.Server`` (a parameter server or a worker) of the cluster test_distributed_tf.py
starts: ``ps_server.py JOB INDEX CLUSTER_JSON``; it serves until killed."""

from __future__ import annotations

import json
import sys

import tensorflow as tf

job, index, cluster = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=index, protocol="grpc",
                     start=True).join()
