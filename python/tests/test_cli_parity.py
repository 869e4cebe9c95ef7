"""A fit from Python equals `orrery run` on the same input, parameters and seed, bit for bit on the CPU:
both go through the same run layer, the arrays in memory in place of the files."""
import json
import subprocess

import numpy as np
import pytest

import orrery
from conftest import blobs, counts, posteriors


def run_cli(cli, tmp_path, method, inputs, params, seed=0, extra_output=None):
    out = tmp_path / "out"
    config = {"method": method, "input": inputs, "params": params,
              "output": dict({"dir": str(out), "format": "npy", "svg": False}, **(extra_output or {})),
              "device": "cpu", "threads": 2, "seed": seed}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    subprocess.run([cli, "run", str(path), "--quiet"], check=True)
    return out


def save(tmp_path, name, array):
    p = tmp_path / name
    np.save(p, array)
    return str(p)


def labels_file(tmp_path, y):
    p = tmp_path / "labels.txt"
    p.write_text("".join(f"{v}\n" for v in y))
    return str(p)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_hssne(cli, tmp_path, alpha):
    X, y = blobs()
    m = orrery.HSSNE(alpha=alpha, perplexity=12, max_iter=150, random_state=7, device="cpu", n_jobs=2).fit(X, y)
    out = run_cli(cli, tmp_path, "hssne", {"vectors": save(tmp_path, "X.npy", X), "labels": labels_file(tmp_path, y),
                                           "perplexity": 12},
                  {"alpha": alpha, "max_iter": 150}, seed=7)
    assert np.array_equal(m.embedding_, np.load(out / "embedding.npy"))
    report = json.loads((out / "report.json").read_text())
    assert m.report_["trace"] == report["trace"]
    assert m.report_["quality"] == report["quality"]


def test_hssne_transform(cli, tmp_path):
    X, y = blobs()
    m = orrery.HSSNE(perplexity=12, max_iter=100, device="cpu", n_jobs=2).fit(X[:150])
    placed = m.transform(X[150:])
    model = run_cli(cli, tmp_path / "fit", "hssne", {"vectors": save(tmp_path, "X.npy", X[:150]), "perplexity": 12},
                    {"max_iter": 100}) if (tmp_path / "fit").mkdir() is None else None
    out = run_cli(cli, tmp_path, "hssne", {"vectors": save(tmp_path, "new.npy", X[150:]), "model": str(model)}, {})
    assert np.array_equal(placed, np.load(out / "embedding.npy"))


@pytest.mark.parametrize("method", ["nerv", "snerv"])
def test_nerv(cli, tmp_path, method):
    X, y = blobs(n_per=30)
    cls = orrery.NeRV if method == "nerv" else orrery.SNeRV
    m = cls(lam=0.3, perplexity=10, max_iter=40, random_state=2, device="cpu", n_jobs=2).fit(X, y)
    out = run_cli(cli, tmp_path, method, {"vectors": save(tmp_path, "X.npy", X), "labels": labels_file(tmp_path, y),
                                          "perplexity": 10},
                  {"lambda": 0.3, "max_iter": 40}, seed=2)
    assert np.array_equal(m.embedding_, np.load(out / "embedding.npy"))


def test_pe(cli, tmp_path):
    P, y = posteriors()
    m = orrery.PE(random_state=4, device="cpu", n_jobs=2).fit(P, y)
    out = run_cli(cli, tmp_path, "pe", {"posteriors": save(tmp_path, "P.npy", P), "labels": labels_file(tmp_path, y)},
                  {}, seed=4)
    assert np.array_equal(m.embedding_, np.load(out / "objects.npy"))
    assert np.array_equal(m.class_coords_, np.load(out / "classes.npy"))


def test_plsv_from_a_matrix_market_file(cli, tmp_path):
    C, y = counts()
    m = orrery.PLSV(topics=3, max_iter=40, random_state=5, device="cpu", n_jobs=2).fit(C)
    rows, cols = np.nonzero(C)
    mtx = tmp_path / "corpus.mtx"
    with open(mtx, "w") as f:
        f.write("%%MatrixMarket matrix coordinate integer general\n")
        f.write(f"{C.shape[0]} {C.shape[1]} {len(rows)}\n")
        for r, c in zip(rows, cols):
            f.write(f"{r + 1} {c + 1} {C[r, c]}\n")
    out = run_cli(cli, tmp_path, "plsv", {"corpus": str(mtx)}, {"topics": 3, "max_iter": 40}, seed=5)
    assert np.array_equal(m.embedding_, np.load(out / "documents.npy"))
    assert np.array_equal(m.theta_, np.load(out / "theta.npy"))
