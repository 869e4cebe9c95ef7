"""AnnData (Scanpy) in one line: a map of adata.obsm[use_rep] (or adata.X) into adata.obsm[key]."""
import numpy as np


def embed_anndata(adata, estimator=None, *, use_rep="X_pca", key=None, labels=None, graph=None):
    """Maps an AnnData's cells and stores the map in adata.obsm.

    Parameters
    ----------
    adata : anndata.AnnData
    estimator : an orrery estimator (default: TSNE())
    use_rep : the obsm key of the representation to map ("X_pca", Scanpy's), or "X" for adata.X
        (dense or sparse; densified). Falls back to adata.X when the key is absent and use_rep is
        the default.
    key : the obsm key written (default "X_" + the estimator's class name in lower case, e.g. X_tsne)
    labels : an obs column of class labels handed to fit as y (supervised methods need one)
    graph : an obsp key of a kNN distance graph to map instead of a representation, e.g. "distances"
        (Scanpy's sc.pp.neighbors): each cell's listed neighbors, calibrated to the estimator's
        perplexity (set it below the graph's neighbors per row; Scanpy's default lists 14); the
        estimator's metric is set to "precomputed". HSSNE and TSNE take a graph.

    Returns the fitted estimator; adata.obsm[key] holds its embedding_ and adata.uns[key] its report_.
    """
    from ._estimators import TSNE

    est = TSNE() if estimator is None else estimator
    if graph is not None:
        if graph not in adata.obsp:
            raise ValueError(f"graph: adata.obsp has no {graph!r} (it has {sorted(adata.obsp.keys())})")
        X = adata.obsp[graph]
        if not hasattr(X, "tocoo"):
            raise ValueError(f"graph: adata.obsp[{graph!r}] is not a scipy.sparse matrix")
        est.set_params(metric="precomputed")
    elif use_rep == "X" or (use_rep == "X_pca" and "X_pca" not in adata.obsm):
        X = adata.X
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    else:
        if use_rep not in adata.obsm:
            raise ValueError(f"use_rep: adata.obsm has no {use_rep!r} (it has {sorted(adata.obsm.keys())})")
        X = np.asarray(adata.obsm[use_rep])
    y = None
    if labels is not None:
        if labels not in adata.obs:
            raise ValueError(f"labels: adata.obs has no column {labels!r}")
        col = adata.obs[labels]
        y = col.cat.codes.to_numpy() if hasattr(col, "cat") else col.to_numpy()
    est.fit(X, y)
    key = key or "X_" + type(est).__name__.lower()
    adata.obsm[key] = est.embedding_
    adata.uns[key] = {"params": {k: v for k, v in est.get_params().items() if v is not None and not isinstance(v, dict)},
                      "report": est.report_}
    return est
