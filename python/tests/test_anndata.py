"""The AnnData helper: Scanpy's representation in, the map and its report into the object."""
import numpy as np
import pytest

import orrery
from conftest import blobs

anndata = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")


def make(with_pca=True):
    X, y = blobs()
    a = anndata.AnnData(X=X.astype(np.float32), obs=pd.DataFrame({"cell_type": pd.Categorical([f"t{v}" for v in y])},
                                                                  index=[f"c{i}" for i in range(len(y))]))
    if with_pca:
        a.obsm["X_pca"] = X[:, :5]
    return a, X, y


def test_maps_x_pca_into_obsm():
    a, X, _ = make()
    est = orrery.embed_anndata(a, orrery.TSNE(perplexity=10, max_iter=200, random_state=3))
    assert a.obsm["X_tsne"].shape == (180, 2)
    direct = orrery.TSNE(perplexity=10, max_iter=200, random_state=3).fit_transform(X[:, :5])
    assert np.array_equal(a.obsm["X_tsne"], direct)
    assert a.uns["X_tsne"]["report"]["method"] == "hssne" and est.embedding_ is not None


def test_falls_back_to_x_and_passes_labels():
    a, X, y = make(with_pca=False)
    orrery.embed_anndata(a, orrery.SNeRV(perplexity=10, max_iter=30), labels="cell_type", key="X_snerv")
    assert a.obsm["X_snerv"].shape == (180, 2)
    with pytest.raises(ValueError, match="no_such"):
        orrery.embed_anndata(a, labels="no_such")
    with pytest.raises(ValueError, match="X_umap"):
        orrery.embed_anndata(a, use_rep="X_umap")


def test_maps_a_neighbor_graph_from_obsp():
    # Scanpy's obsp["distances"] (sc.pp.neighbors): the graph is the input, calibrated at the perplexity
    sp = pytest.importorskip("scipy.sparse")
    a, X, y = make()
    D = np.sqrt(((X[:, None, :5] - X[None, :, :5]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    nb = np.argsort(D, axis=1, kind="stable")[:, :14]
    rows = np.repeat(np.arange(len(X)), 14)
    a.obsp["distances"] = sp.csr_matrix((D[rows, nb.ravel()], (rows, nb.ravel())), shape=D.shape)
    est = orrery.embed_anndata(a, orrery.TSNE(perplexity=4, max_iter=300, random_state=3), graph="distances")
    assert est.report_["input"]["source"] == "neighbor_graph" and est.metric == "precomputed"
    assert a.obsm["X_tsne"].shape == (180, 2)
    Y = a.obsm["X_tsne"]
    d = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    assert (y[d.argmin(1)] == y).mean() > 0.95
    with pytest.raises(ValueError, match="connectivities"):
        orrery.embed_anndata(a, graph="connectivities")
