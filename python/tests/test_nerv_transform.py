"""NeRV's and supervised NeRV's transform: new points placed into the fitted map land among their
cluster, equal `orrery run` with input.model bit for bit, repeat, and a map of distances refuses."""
import json
import subprocess

import numpy as np
import pytest

import orrery
from conftest import blobs


def nearest_label(placed, Y, y_fit):
    D = ((placed[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return y_fit[D.argmin(axis=1)]


@pytest.mark.parametrize("cls", [orrery.NeRV, orrery.SNeRV])
@pytest.mark.parametrize("dim", [2, 3])
def test_nerv_transform_places_new_points_among_their_cluster(cls, dim):
    X, y = blobs(seed=4)
    m = cls(n_components=dim, perplexity=10, max_iter=150, random_state=1, device="cpu").fit(X[::2], y[::2])
    placed = m.transform(X[1::2])
    assert placed.shape == (90, dim)
    assert np.isfinite(placed).all()
    assert (nearest_label(placed, m.embedding_, y[::2]) == y[1::2]).mean() > 0.95
    again = m.transform(X[1::2])
    assert np.array_equal(placed, again)
    # a point's place does not depend on the others placed with it
    assert np.array_equal(m.transform(X[1:20:2]), placed[:10])


def test_nerv_transform_equals_the_cli(tmp_path):
    cli = __import__("os").environ.get("ORRERY_CLI")
    if not cli:
        pytest.skip("ORRERY_CLI is not set")
    X, _ = blobs()
    m = orrery.NeRV(perplexity=12, max_iter=60, device="cpu", n_jobs=2).fit(X[:150])
    placed = m.transform(X[150:])
    np.save(tmp_path / "X.npy", X[:150])
    np.save(tmp_path / "new.npy", X[150:])

    def run(name, inputs, params):
        config = {"method": "nerv", "input": inputs, "params": params,
                  "output": {"dir": str(tmp_path / name), "format": "npy", "svg": False},
                  "device": "cpu", "threads": 2, "seed": 0}
        (tmp_path / f"{name}.json").write_text(json.dumps(config))
        subprocess.run([cli, "run", str(tmp_path / f"{name}.json"), "--quiet"], check=True)
        return tmp_path / name

    model = run("fit", {"vectors": str(tmp_path / "X.npy"), "perplexity": 12}, {"max_iter": 60})
    out = run("place", {"vectors": str(tmp_path / "new.npy"), "model": str(model)}, {})
    assert np.array_equal(placed, np.load(out / "embedding.npy"))


def test_nerv_transform_refuses_a_map_of_distances_and_the_wrong_width():
    X, _ = blobs(n_per=20)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    m = orrery.NeRV(metric="precomputed", perplexity=5, max_iter=20, device="cpu").fit(D)
    with pytest.raises(ValueError, match="distances"):
        m.transform(X[:5])
    m = orrery.NeRV(perplexity=5, max_iter=20, device="cpu").fit(X)
    with pytest.raises(ValueError, match="features"):
        m.transform(X[:5, :3])
