"""Each estimator on small data: the map separates what is separate, the fitted attributes have their
shapes, transform places points where they belong, and results repeat for the same seed."""
import numpy as np
import pytest

import orrery
from conftest import blobs, counts, posteriors


def knn_accuracy(Y, y, k=5):
    D = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    nn = np.argsort(D, axis=1)[:, :k]
    votes = np.array([np.bincount(y[r], minlength=y.max() + 1).argmax() for r in nn])
    return (votes == y).mean()


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_hssne_separates_clusters(alpha):
    X, y = blobs()
    m = orrery.HSSNE(alpha=alpha, perplexity=10, max_iter=300, random_state=1)
    Y = m.fit_transform(X)
    assert Y.shape == (180, 2)
    assert knn_accuracy(Y, y) > 0.95
    assert m.report_["method"] == "hssne"
    assert m.report_["params"]["alpha"] == alpha
    assert m.n_iter_ > 0 and np.isfinite(m.kl_divergence_)


def test_hssne_three_dimensions_and_transform():
    X, y = blobs(seed=2)
    m = orrery.HSSNE(n_components=3, perplexity=10, max_iter=300).fit(X[::2], y[::2])
    assert m.embedding_.shape == (90, 3)
    placed = m.transform(X[1::2])
    assert placed.shape == (90, 3)
    # each new point lands among the map's points of its cluster
    D = ((placed[:, None, :] - m.embedding_[None, :, :]) ** 2).sum(-1)
    assert (y[::2][D.argmin(axis=1)] == y[1::2]).mean() > 0.95


def test_tsne_is_hssne_with_alpha_one():
    X, _ = blobs()
    a = orrery.TSNE(perplexity=10, max_iter=200).fit_transform(X)
    b = orrery.HSSNE(alpha=1.0, perplexity=10, max_iter=200).fit_transform(X)
    assert np.array_equal(a, b)
    assert "alpha" not in orrery.TSNE().get_params()


def test_precomputed_distances_and_affinities():
    X, y = blobs()
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    Y = orrery.HSSNE(metric="precomputed", perplexity=10, max_iter=300).fit_transform(D)
    assert knn_accuracy(Y, y) > 0.95
    sp = pytest.importorskip("scipy.sparse")
    P = np.exp(-D ** 2 / 20.0)
    np.fill_diagonal(P, 0)
    P[P < 1e-3] = 0
    P /= P.sum()
    est = orrery.HSSNE(max_iter=300).fit(affinities=sp.csr_matrix(P))
    assert knn_accuracy(est.embedding_, y) > 0.95
    assert est.report_["input"]["source"] == "affinity_matrix"
    # a sparse X is never guessed to hold affinities
    with pytest.raises(ValueError, match="fit\\(affinities=P\\)"):
        orrery.HSSNE(max_iter=10).fit(sp.csr_matrix(P))
    with pytest.raises(ValueError, match="not both"):
        orrery.HSSNE(max_iter=10).fit(X, affinities=sp.csr_matrix(P))


def _knn_graph(X, k, drop=None):
    """scikit-learn's kneighbors_graph(mode="distance") with exact distances; rows in `drop` keep
    only their `drop[i]` nearest."""
    sp = pytest.importorskip("scipy.sparse")
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    rows, cols, vals = [], [], []
    for i in range(len(X)):
        nb = np.argsort(D[i], kind="stable")[:(drop or {}).get(i, k)]
        rows += [i] * len(nb)
        cols += list(nb)
        vals += list(D[i, nb])
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(X), len(X)))


def test_a_sparse_precomputed_matrix_is_a_knn_distance_graph():
    # scikit-learn's TSNE reads a sparse X with metric="precomputed" as kNN distances: calibrated at
    # the perplexity on its lists, the same P (and so, from the same seed, the same map) as the
    # exact search's on the vectors
    X, y = blobs()
    a = orrery.TSNE(perplexity=10, affinities="sparse", neighbors="exact", repulsion="exact", max_iter=20,
                    random_state=1).fit(X)
    G = _knn_graph(X, 30)
    b = orrery.TSNE(perplexity=10, metric="precomputed", repulsion="exact", max_iter=20, random_state=1).fit(G)
    assert b.report_["input"]["source"] == "neighbor_graph"
    assert np.abs(a.embedding_ - b.embedding_).max() < 1e-8 * np.abs(a.embedding_).max()
    # rows of any length; rows too short for the perplexity are counted
    G = _knn_graph(X, 30, drop={0: 5, 1: 12})
    c = orrery.TSNE(perplexity=10, metric="precomputed", max_iter=300, random_state=1).fit(G, y)
    assert knn_accuracy(c.embedding_, y) > 0.95
    g = c.report_["input"]["neighbor_graph"]
    assert (g["min_neighbors"], g["max_neighbors"], g["rows_below_perplexity"], g["reachable_perplexity"]) == \
        (5, 30, 1, 5.0)
    with pytest.raises(ValueError, match="square"):
        orrery.TSNE(metric="precomputed").fit(G[:, :50])
    with pytest.raises(ValueError, match="not supported by NeRV"):
        orrery.NeRV(metric="precomputed").fit(G)


@pytest.mark.parametrize("lam", [0.1, 0.9])
def test_nerv_and_snerv(lam):
    X, y = blobs(n_per=40)
    Y = orrery.NeRV(lam=lam, perplexity=10, max_iter=100).fit_transform(X)
    assert Y.shape == (120, 2) and knn_accuracy(Y, y) > 0.9
    s = orrery.SNeRV(lam=lam, perplexity=10, max_iter=100).fit(X, y)
    assert knn_accuracy(s.embedding_, y) > 0.9
    assert s.report_["result"]["metric"]["components"] >= 1


def test_pe_maps_objects_near_their_class_and_places_new_ones():
    P, y = posteriors()
    m = orrery.PE(random_state=3).fit(P, y)
    assert m.embedding_.shape == (120, 2) and m.class_coords_.shape == (3, 2)
    D = ((m.embedding_[:, None, :] - m.class_coords_[None, :, :]) ** 2).sum(-1)
    assert (D.argmin(axis=1) == y).mean() > 0.9
    placed = m.transform(P[:10])
    # placing the fitted objects against the fitted classes finds (about) where the fit left them
    assert np.allclose(placed, m.embedding_[:10], atol=1e-3)


def test_pe_posterior_model_on_vectors():
    X, y = blobs(n_per=30)
    m = orrery.PE(posterior_model={}).fit(X, y)
    assert m.embedding_.shape == (90, 2) and m.class_coords_.shape == (3, 2)


def test_plsv_topics_and_fold_in():
    C, y = counts()
    m = orrery.PLSV(topics=3, max_iter=60, random_state=2).fit(C, y, vocabulary=[f"w{i}" for i in range(50)])
    assert m.embedding_.shape == (80, 2) and m.topic_coords_.shape == (3, 2) and m.theta_.shape == (3, 50)
    assert np.allclose(m.theta_.sum(axis=1), 1.0)
    assert m.vocabulary_[:2] == ["w0", "w1"]
    assert knn_accuracy(m.embedding_, y) > 0.9
    folded = m.transform(C[:20])
    assert folded.shape == (20, 2)
    D = ((folded[:, None, :] - m.embedding_[None, :, :]) ** 2).sum(-1)
    assert (y[D.argmin(axis=1)] == y[:20]).mean() > 0.9


def test_plsv_from_texts():
    words = [["apple", "pear", "plum", "fig"], ["bolt", "nut", "screw", "gear"]]
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(words[i % 2], 12)) for i in range(40)]
    m = orrery.PLSV(topics=2, max_iter=40, text={"min_df": 1}).fit(docs)
    assert m.embedding_.shape == (40, 2)
    assert sorted(m.vocabulary_) == sorted(words[0] + words[1])


def test_sparse_and_dense_corpora_give_the_same_fit():
    sp = pytest.importorskip("scipy.sparse")
    C, _ = counts(seed=4)
    a = orrery.PLSV(topics=3, max_iter=30).fit(C)
    b = orrery.PLSV(topics=3, max_iter=30).fit(sp.csr_matrix(C))
    c = orrery.PLSV(topics=3, max_iter=30).fit(sp.coo_matrix(C).tocsc())
    assert np.array_equal(a.embedding_, b.embedding_) and np.array_equal(a.theta_, b.theta_)
    assert np.array_equal(a.embedding_, c.embedding_)


def test_same_seed_same_map_and_other_seed_other_map():
    X, _ = blobs()
    a = orrery.HSSNE(perplexity=10, max_iter=100, random_state=5).fit_transform(X)
    b = orrery.HSSNE(perplexity=10, max_iter=100, random_state=5).fit_transform(X)
    c = orrery.HSSNE(perplexity=10, max_iter=100, random_state=6).fit_transform(X)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_numpy_scalar_parameters_give_the_python_numbers_map():
    """A grid search hands parameters as numpy scalars (np.arange, np.linspace): the run's config takes
    them as the numbers they are."""
    X, _ = blobs()
    a = orrery.HSSNE(perplexity=10, max_iter=100, alpha=0.5, random_state=3).fit_transform(X)
    b = orrery.HSSNE(perplexity=np.float64(10), max_iter=np.int64(100), alpha=np.float32(0.5),
                     random_state=np.int32(3)).fit_transform(X)
    assert np.array_equal(a, b)


def test_float32_and_fortran_inputs_give_the_float64_result():
    X, _ = blobs()
    X32 = X.astype(np.float32)
    a = orrery.HSSNE(perplexity=10, max_iter=100).fit_transform(X32.astype(np.float64))
    b = orrery.HSSNE(perplexity=10, max_iter=100).fit_transform(X32)
    c = orrery.HSSNE(perplexity=10, max_iter=100).fit_transform(np.asfortranarray(X32.astype(np.float64)))
    assert np.array_equal(a, b) and np.array_equal(a, c)


def test_evaluate_scores_a_perfect_and_a_random_map():
    X, y = blobs()
    good = orrery.evaluate(X, X[:, :2] * 0 + X[:, :2], y, k=(5, 10))
    assert [r["k"] for r in good["at_k"]] == [5, 10]
    same = orrery.evaluate(X, X, y, k=(5,))
    assert same["at_k"][0]["trustworthiness"] == pytest.approx(1.0)
    assert same["at_k"][0]["knn_accuracy"] == pytest.approx(1.0)
    rnd = orrery.evaluate(X, np.random.default_rng(0).normal(size=(180, 2)), y, k=(5,))
    assert rnd["at_k"][0]["trustworthiness"] < 0.7
    with pytest.raises(ValueError, match="Y"):
        orrery.evaluate(X, X[:10], y)


def test_fit_and_transform_write_no_files(tmp_path, monkeypatch):
    """Inputs, outputs and a fitted model travel in memory: neither the temporary directory nor the
    working directory gains a file during any estimator's fit or transform."""
    import tempfile
    tmp, cwd = tmp_path / "tmp", tmp_path / "cwd"
    tmp.mkdir(), cwd.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.chdir(cwd)

    def refuse(*a, **k):
        raise AssertionError("a temporary file or directory was made")
    for name in ("mkdtemp", "mkstemp"):  # what TemporaryDirectory, NamedTemporaryFile, ... make theirs with
        monkeypatch.setattr(tempfile, name, refuse)
    X, y = blobs(seed=4)
    for est in (orrery.HSSNE(perplexity=10, max_iter=50), orrery.NeRV(perplexity=10, max_iter=20)):
        est.fit(X[::2], y[::2])
        assert est.transform(X[1::2]).shape == (90, 2)
    P, py = posteriors()
    pe = orrery.PE(max_iter=20).fit(P, py)
    assert pe.transform(P[:5]).shape == (5, 2)
    C, _ = counts()
    plsv = orrery.PLSV(topics=3, max_iter=20).fit(C)
    assert plsv.transform(C[:5]).shape[1] == 2
    assert list(tmp.iterdir()) == [] and list(cwd.iterdir()) == []


def test_init_takes_a_start_array_or_the_principal_components():
    # a given start (scikit-learn's init=array) replaces the seeded Gaussian: the seed no longer
    # matters, and a map can be continued from another; init="pca" likewise; bad starts are refused
    X, y = blobs()
    Y0 = np.random.RandomState(0).randn(len(X), 2)
    a = orrery.TSNE(init=Y0, perplexity=10, max_iter=100, random_state=1).fit(X)
    b = orrery.TSNE(init=Y0, perplexity=10, max_iter=100, random_state=2).fit(X)
    assert np.array_equal(a.embedding_, b.embedding_)
    p1 = orrery.TSNE(init="pca", perplexity=10, max_iter=100, random_state=1).fit_transform(X)
    p2 = orrery.TSNE(init="pca", perplexity=10, max_iter=100, random_state=2).fit_transform(X)
    assert np.array_equal(p1, p2) and not np.array_equal(p1, a.embedding_)
    r1 = orrery.TSNE(perplexity=10, max_iter=100, random_state=1).fit_transform(X)
    r2 = orrery.TSNE(perplexity=10, max_iter=100, random_state=2).fit_transform(X)
    assert not np.array_equal(r1, r2)
    with pytest.raises(ValueError, match="needs one row per point"):
        orrery.TSNE(init=Y0[:-1], max_iter=10).fit(X)
    with pytest.raises(ValueError, match="N x n_components array"):
        orrery.TSNE(init=np.zeros(5), max_iter=10).fit(X)
    with pytest.raises(ValueError, match="no such file"):
        orrery.TSNE(init="spectrum", max_iter=10).fit(X)
    with pytest.raises(ValueError, match="array start is taken by TSNE, HSSNE, NeRV and SNeRV"):
        orrery.PLSV(topics=3, init=Y0, max_iter=10).fit(counts()[0])


def test_spectral_and_array_starts_for_tsne_nerv_and_snerv():
    # init="spectral" (P's leading nontrivial eigenvectors) starts every neighbour-embedding
    # estimator, from vectors or from a kNN graph, and does not depend on the seed; NeRV and SNeRV
    # take an array start as TSNE does, as given: a finished map continues where it ended
    X, y = blobs()
    for est in (orrery.TSNE(perplexity=10, max_iter=60), orrery.NeRV(perplexity=10, max_iter=20),
                orrery.SNeRV(perplexity=10, max_iter=20)):
        est.set_params(init="spectral", random_state=1)
        a = est.fit_transform(X, y)
        est.set_params(random_state=2)
        b = est.fit_transform(X, y)
        assert a.shape == (len(X), 2) and np.isfinite(a).all()
        if not isinstance(est, orrery.SNeRV):  # (SNeRV's class model is seeded)
            assert np.array_equal(a, b), type(est).__name__
    first = orrery.NeRV(perplexity=10, max_iter=15, random_state=1).fit(X)
    more = orrery.NeRV(perplexity=10, max_iter=15, random_state=5, init=first.embedding_).fit(X)
    assert more.report_["trace"][0] <= first.report_["result"]["objective"]
    with pytest.raises(ValueError, match="needs one row per point"):
        orrery.SNeRV(init=first.embedding_[:-1], max_iter=5).fit(X, y)


@pytest.mark.parametrize("metric", ["cosine", "correlation"])
def test_cosine_and_correlation_metrics(metric):
    # the neighbors and ranks are the metric's: the report's trustworthiness is scikit-learn's under the
    # same metric; a row's length (a power of two, exact) does not change the map or a placement
    manifold = pytest.importorskip("sklearn.manifold")
    X, y = blobs()
    X = X + 3.0  # away from the origin, where cosine and Euclidean neighbors differ
    est = orrery.TSNE(metric=metric, perplexity=10, max_iter=200, random_state=1).fit(X, y)
    for row in est.report_["quality"]["at_k"]:
        if row["k"] in (5, 10):
            want = manifold.trustworthiness(X, est.embedding_, n_neighbors=row["k"], metric=metric)
            assert abs(row["trustworthiness"] - want) < 1e-9
    scale = 2.0 ** np.arange(len(X))[:, None] % 7
    scaled = orrery.TSNE(metric=metric, perplexity=10, max_iter=200, random_state=1).fit(X * scale, y)
    assert np.array_equal(est.embedding_, scaled.embedding_)
    euclid = orrery.TSNE(perplexity=10, max_iter=200, random_state=1).fit_transform(X * scale)
    assert not np.array_equal(euclid, est.embedding_)
    new = X[:10] + 0.01
    assert np.array_equal(est.transform(new), est.transform(new * 4.0))
    Z = X.copy()
    Z[3] = 0.0
    with pytest.raises(ValueError, match="row 4"):
        orrery.TSNE(metric=metric, max_iter=10).fit(Z)
    with pytest.raises(ValueError, match="metric"):
        orrery.TSNE(metric="manhattan", max_iter=10).fit(X)


def test_evaluate_takes_the_cosine_and_correlation_metrics():
    manifold = pytest.importorskip("sklearn.manifold")
    rng = np.random.RandomState(1)
    X, Y = rng.rand(120, 6) + 1.0, rng.randn(120, 2)
    for metric in ("cosine", "correlation"):
        r = orrery.evaluate(X, Y, k=(7,), metric=metric)
        want = manifold.trustworthiness(X, Y, n_neighbors=7, metric=metric)
        assert abs(r["at_k"][0]["trustworthiness"] - want) < 1e-12
    with pytest.raises(ValueError, match="metric"):
        orrery.evaluate(X, Y, metric="manhattan")


def directions(n=160, seed=0):
    """Two groups of 6-D vectors that differ in direction (axis 0 or 1, noise 0.2 per coordinate), not
    in length (spread evenly in log from 0.01 to 3): near the origin the groups meet in Euclidean
    distance, never in inner product."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 2
    U = np.zeros((n, 6))
    U[np.arange(n), y] = 1.0
    X = np.exp(rng.uniform(np.log(0.01), np.log(3.0), (n, 1))) * (U + 0.2 * rng.randn(n, 6))
    return X, y


def ranks(score):
    """rank[i, j]: 1 + the points l != i that score above j for i (larger score nearer), ties by index;
    i itself last. order[:, :k] are each point's top k, itself excluded."""
    s = np.array(score, dtype=float)
    np.fill_diagonal(s, -np.inf)
    order = np.argsort(-s, axis=1, kind="stable")
    r = np.empty_like(order)
    r[np.arange(len(s))[:, None], order] = np.arange(1, len(s) + 1)
    return r, order


def trust_and_continuity(r_in, r_out, K):
    """Venna and Kaski's trustworthiness and continuity from the two spaces' ranks."""
    n = len(r_in)
    scale = 2.0 / (n * K * (2 * n - 3 * K - 1))
    t = np.where((r_out <= K) & (r_in > K), r_in - K, 0).sum()
    c = np.where((r_in <= K) & (r_out > K), r_out - K, 0).sum()
    return 1 - scale * t, 1 - scale * c


def test_inner_product_neighbors_are_the_largest_inner_products():
    # the input's neighbors are numpy's top k of X X' with the point itself excluded (here many a
    # point's largest inner product is another's): both quality measures over the input ranks agree
    # with those computed from numpy's lists, at every K, on all points and on a sample
    manifold = pytest.importorskip("sklearn.manifold")
    rng = np.random.RandomState(3)
    X = rng.randn(150, 5) * np.exp(rng.uniform(-1, 1, (150, 1)))
    Y = rng.randn(150, 2)
    S = X @ X.T
    r_in, order = ranks(S)
    r_out, _ = ranks(-((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    assert (order[:, 0] != np.arange(150)).all()
    assert (S[np.arange(150), order[:, 0]] > np.diag(S)).sum() > 30
    ks = (1, 3, 7, 15, 30)
    r = orrery.evaluate(X, Y, k=ks, metric="inner_product", queries=0)
    D = S.max() + 1.0 - S  # per row decreasing in the inner product, for scikit-learn's precomputed input
    np.fill_diagonal(D, 0.0)
    for row, K in zip(r["at_k"], ks):
        t, c = trust_and_continuity(r_in, r_out, K)
        assert abs(row["trustworthiness"] - t) < 1e-12, K
        assert abs(row["continuity"] - c) < 1e-12, K
        assert abs(row["trustworthiness"] - manifold.trustworthiness(D, Y, n_neighbors=K, metric="precomputed")) < 1e-12
    euclid = orrery.evaluate(X, Y, k=ks, queries=0)
    assert [a["continuity"] for a in euclid["at_k"]] != [a["continuity"] for a in r["at_k"]]
    with pytest.raises(ValueError, match="metric"):
        orrery.evaluate(X, Y, metric="dot")


def test_inner_product_metric_maps_directions():
    # TSNE(metric="inner_product") keeps two groups of one direction apart; the report's quality
    # ranks the input by inner product (scikit-learn's trustworthiness on the same ranks); new points
    # are placed by inner product among the fitted ones; what cannot honour the metric is refused
    manifold = pytest.importorskip("sklearn.manifold")
    X, y = directions()
    est = orrery.TSNE(metric="inner_product", perplexity=10, max_iter=300, random_state=1).fit(X, y)
    assert est.report_["input"]["metric"] == "inner_product"
    assert knn_accuracy(est.embedding_, y) > 0.95
    S = X @ X.T
    D = S.max() + 1.0 - S
    np.fill_diagonal(D, 0.0)
    for row in est.report_["quality"]["at_k"]:
        if row["k"] in (5, 10):
            want = manifold.trustworthiness(D, est.embedding_, n_neighbors=row["k"], metric="precomputed")
            assert abs(row["trustworthiness"] - want) < 1e-9
    new, y_new = directions(n=40, seed=1)
    placed = est.transform(new)
    nearest = ((placed[:, None, :] - est.embedding_[None, :, :]) ** 2).sum(-1).argmin(axis=1)
    assert (y[nearest] == y_new).mean() >= 0.95
    approx = orrery.HSSNE(metric="inner_product", perplexity=10, max_iter=300, neighbors="approximate",
                          random_state=1).fit(X, y)
    assert approx.report_["input"]["neighbor_recall"] >= 0.9
    assert knn_accuracy(approx.embedding_, y) > 0.95
    with pytest.raises(ValueError, match="input.pca"):
        orrery.HSSNE(metric="inner_product", pca=3, max_iter=10).fit(X)
    with pytest.raises(ValueError, match="input.metric: inner_product: every row"):
        orrery.TSNE(metric="inner_product", max_iter=10).fit(np.zeros((40, 3)))
    with pytest.raises(ValueError, match="metric"):
        orrery.TSNE(metric="dot", max_iter=10).fit(X)


@pytest.mark.parametrize("optimizer", ["fixed_point", "gradient"])
def test_callbacks_watch_the_fit_and_can_stop_it(optimizer):
    X, _ = blobs()
    seen = []

    def watch(iteration, objective, Y):
        seen.append((iteration, objective, Y.copy()))
        with pytest.raises(ValueError):
            Y[0, 0] = 1.0  # a read-only view of the map
        return iteration >= 60

    est = orrery.TSNE(perplexity=10, optimizer=optimizer, max_iter=400, random_state=1, callbacks=[watch],
                      callbacks_every_iters=20).fit(X)
    assert [s[0] for s in seen] == [20, 40, 60]
    assert est.report_["result"]["stop_reason"] == "callback" and est.n_iter_ == 60
    assert np.array_equal(seen[-1][2], est.embedding_)
    assert seen[-1][1] == est.report_["trace"][-1]
    # stopping at iteration 60 leaves the map of a 60-iteration fit
    ref = orrery.TSNE(perplexity=10, optimizer=optimizer, max_iter=60, random_state=1).fit_transform(X)
    assert np.array_equal(ref, est.embedding_)
    # an exception in a callback ends the fit with it
    def boom(iteration, objective, Y):
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        orrery.TSNE(perplexity=10, max_iter=100, callbacks=boom).fit(X)
    with pytest.raises(ValueError, match="callbacks"):
        orrery.TSNE(max_iter=10, callbacks=[1]).fit(X)
    with pytest.raises(ValueError, match="callbacks_every_iters"):
        orrery.TSNE(max_iter=10, callbacks=watch, callbacks_every_iters=0).fit(X)


def test_verbose_lines_go_to_pythons_stderr(monkeypatch):
    # a notebook shows sys.stderr in the cell; the process's own stderr goes to the server's log
    # (without tqdm: the run's own lines, iterations included)
    import contextlib
    import io
    import sys
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # an import of it fails
    X, _ = blobs()
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        orrery.TSNE(perplexity=10, max_iter=60, exaggeration_iter=20, verbose=True).fit(X)
    lines = buf.getvalue().splitlines()
    assert any(line.startswith("[hssne] iter") for line in lines), lines
    assert any("neighbors" in line for line in lines), lines
    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet):
        orrery.TSNE(perplexity=10, max_iter=60).fit(X)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("cls", [orrery.TSNE, orrery.NeRV])
def test_verbose_shows_a_progress_bar_with_tqdm(cls):
    # with tqdm: a bar over max_iter fed every 10 iterations, the stages (neighbours, affinities,
    # the result) written above it, no iteration lines; the map is the one a quiet fit makes
    tqdm = pytest.importorskip("tqdm")
    import contextlib
    import io
    X, y = blobs()
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        loud = cls(perplexity=10, max_iter=40, verbose=True, random_state=3).fit(X, y)
    text = buf.getvalue()
    assert "40/40" in text, text
    assert "cost " in text, text
    assert "affinities" in text and "points:" in text, text
    assert "] iter " not in text and "mem:" not in text, text
    quiet = cls(perplexity=10, max_iter=40, random_state=3).fit(X, y)
    assert np.array_equal(loud.embedding_, quiet.embedding_)


@pytest.mark.parametrize("cls", [orrery.NeRV, orrery.SNeRV])
def test_nerv_callbacks_see_the_map_in_input_units_and_can_stop_it(cls):
    X, y = blobs(n_per=40)
    seen = []

    def watch(iteration, cost, Y):
        seen.append((iteration, cost, Y.copy()))
        return iteration >= 30

    est = cls(perplexity=10, max_iter=200, random_state=1, callbacks=watch, callbacks_every_iters=10).fit(X, y)
    assert [s[0] for s in seen] == [10, 20, 30]
    assert est.report_["result"]["stop_reason"] == "callback" and est.n_iter_ == 30
    assert np.array_equal(seen[-1][2], est.embedding_) and seen[-1][1] == est.report_["trace"][-1]
    ref = cls(perplexity=10, max_iter=30, random_state=1).fit(X, y)
    assert np.array_equal(ref.embedding_, est.embedding_)


def test_pe_comm_is_checked_and_one_process_is_the_default():
    # comm=None (one process) and "single" fit alike; a value that names no communicator is refused
    # naming comm; a model file does not keep it (tests/comm/mpi/python_pe.py runs several processes)
    P, y = posteriors()
    a = orrery.PE(max_iter=20).fit(P, y)
    b = orrery.PE(max_iter=20, comm="single").fit(P, y)
    assert np.array_equal(a.embedding_, b.embedding_)
    assert b.report_["comm"]["name"] == "single" and b.report_["comm"]["ranks"] == 1
    with pytest.raises(ValueError, match="comm"):
        orrery.PE(max_iter=20, comm="bogus").fit(P, y)
    with pytest.raises(ValueError, match="comm"):
        orrery.PE(max_iter=20, comm=3).fit(P, y)
    # comm_timeout reaches the run: seconds >= 0 pass (0: no limit), anything else is refused naming it
    c = orrery.PE(max_iter=20, comm_timeout=0).fit(P, y)
    assert np.array_equal(a.embedding_, c.embedding_) and c.report_["config"]["comm_timeout"] == 0
    assert a.get_params()["comm_timeout"] == 600.0
    for bad in (-1, "10"):
        with pytest.raises(ValueError, match="comm_timeout: expected seconds >= 0"):
            orrery.PE(max_iter=20, comm_timeout=bad).fit(P, y)
