"""TNAS on NAS-Bench-Graph, leave one task out (Shala, Elsken, Hutter & Grabocka, 2023). The argument names
the target, one of the 8 graph datasets that share the 9-op space (cora, citeseer, pubmed, cs, physics,
photo, computers, arxiv); the other seven are the source tasks:

    python -m scripts.meta_train --config configs/nasbench_graph_tnas.py:cora \
        --workdir /tmp/nasjax_tnas/nasbench_graph_cora
    python -m scripts.train --config configs/nasbench_graph_tnas.py:cora --workdir /tmp/tnas_nbg_cora

psi is the bidirectional D-VAE encoder over each cell's op-on-node DAG, one of 9 link structures
(``surrogates.arch_encoders``); phi reads the target's (one-hot, score) observations; TNAS scores all 26,206
architectures (one canonical string per table row) every step. Reports show test error (the tables hold
one validation and one test accuracy per architecture). ``proteins`` is not in the suite: its space has
another op set (5 ops) and 2,021 rows, so its table cannot score the other datasets' architectures.
Searchers as ``configs/nb201_tnas.py``.
"""

from configs.nb201_tnas import META_ROOT, leave_one_out, model_config

TARGETS = ("cora", "citeseer", "pubmed", "cs", "physics", "photo", "computers", "arxiv")
NUM_FEATURES = 45  # one-hot length: 9 link structures + 4 x 9 ops (spaces.nasbench_graph)


def get_config(arg=None):
    target = arg or "cora"
    model = model_config("dag", NUM_FEATURES, dag="nasbench_graph")
    return leave_one_out("nasbench_graph", TARGETS, target, model, f"{META_ROOT}/nasbench_graph_{target}")
