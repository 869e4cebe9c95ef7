"""Quality measures of a map against its input (what `orrery evaluate` reports)."""
import json

import numpy as np

from . import _core
from ._estimators import _dense, _seed, _threads


def evaluate(X, Y, labels=None, k=(5, 10, 20), *, metric="euclidean", perplexity=0.0, queries=None,
             random_state=None, n_jobs=None, device="auto"):
    """Scores the map Y of the points X.

    Parameters
    ----------
    X : array (N, d), or (N, N) distances with metric='precomputed'
    metric : 'euclidean', 'cosine', 'correlation' or 'inner_product' (how the input vectors are
        compared: inner_product ranks each point's neighbors by largest inner product, itself
        excluded; the map is Euclidean), or 'precomputed'
    Y : array (N, D), the map
    labels : array (N,) of integer classes (-1 unknown), optional: adds k-NN accuracy and 1-NN homogeneity
    k : sequence of int, the neighborhood sizes K
    perplexity : float, > 0 adds NeRV's smoothed precision and recall at this perplexity
    queries : int or None, query points the rank measures average over: None the default rule (all
        points up to 10,000, else a seeded sample), 0 all points, n > 0 n seeded points
    random_state, n_jobs, device : as for the estimators

    Returns
    -------
    dict: "at_k" (one dict per K: trustworthiness, continuity, mrre_neighborhood, mrre_visual, lcmc,
    knn_accuracy), "homogeneity_1nn", "smoothed_precision", "smoothed_recall", and the sample used.
    """
    X = _dense(X, "X")
    Y = _dense(Y, "Y")
    if metric not in ("euclidean", "cosine", "correlation", "inner_product", "precomputed"):
        raise ValueError(f"metric: expected 'euclidean', 'cosine', 'correlation', 'inner_product' or 'precomputed', "
                         f"found {metric!r}")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"Y: {Y.shape[0]} points in the map for the {X.shape[0]} of X")
    lab = []
    if labels is not None:
        lab = np.asarray(labels)
        if lab.shape != (X.shape[0],) or not np.issubdtype(lab.dtype, np.integer):
            raise ValueError(f"labels: expected {X.shape[0]} integer labels, found {lab.shape} of {lab.dtype}")
        lab = [int(v) for v in lab]
    ks = [int(v) for v in np.atleast_1d(k)]
    q = -1 if queries is None else int(queries)
    return json.loads(_core.evaluate(X, Y, lab, ks, metric == "precomputed", float(perplexity), q,
                                     _seed(random_state), _threads(n_jobs), device,
                                     "euclidean" if metric == "precomputed" else metric))
