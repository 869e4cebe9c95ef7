"""Durable models: est.save / orrery.load and pickling through the same versioned file."""
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest

import orrery
from conftest import blobs, counts, posteriors

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def _fits():
    X, y = blobs(n_per=30)
    P, labels = posteriors()
    C, _ = counts()
    return [
        (orrery.TSNE(perplexity=10, max_iter=100, random_state=1).fit(X), X[:4]),
        (orrery.HSSNE(alpha=0.5, perplexity=10, max_iter=100, random_state=1).fit(X), X[:4]),
        (orrery.NeRV(perplexity=10, max_iter=20, random_state=1).fit(X), X[:4]),
        (orrery.SNeRV(perplexity=10, max_iter=20, random_state=1).fit(X, y), X[:4]),
        (orrery.PE(random_state=3).fit(P, labels), P[:4]),
        (orrery.PLSV(topics=3, max_iter=5, random_state=1).fit(C), C[:4]),
    ]


def test_every_estimator_saves_loads_and_pickles_with_its_transform(tmp_path):
    for est, new in _fits():
        path = tmp_path / (type(est).__name__ + ".orrery")
        est.save(path)
        for back in (orrery.load(path), pickle.loads(pickle.dumps(est))):
            assert type(back) is type(est)
            assert back.get_params().keys() == est.get_params().keys()
            assert np.array_equal(back.embedding_, est.embedding_)
            assert back.report_ == est.report_
            assert np.array_equal(back.transform(new), est.transform(new)), type(est).__name__


def test_a_model_written_by_format_1_still_loads():
    # written by orrery 0.1.0 (model format 1): later versions must read it
    est = orrery.load(os.path.join(FIXTURES, "tsne_format1.orrery"))
    X = np.load(os.path.join(FIXTURES, "tsne_format1_points.npy"))
    assert type(est) is orrery.TSNE and est.perplexity == 5 and est.embedding_.shape == (40, 2)
    Y = est.transform(X[:3])
    assert Y.shape == (3, 2) and np.isfinite(Y).all()


def test_damaged_newer_and_foreign_files_are_refused(tmp_path):
    est, _ = _fits()[0]
    path = tmp_path / "m.orrery"
    est.save(path)
    data = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    def write(entries, name):
        p = tmp_path / name
        with zipfile.ZipFile(p, "w") as z:
            for n, b in entries.items():
                z.writestr(n, b)
        return p
    edited = dict(entries)
    edited["attrs/embedding_.npy"] = entries["attrs/embedding_.npy"][:-8] + bytes(8)
    with pytest.raises(ValueError, match="checksum"):
        orrery.load(write(edited, "edited.orrery"))
    newer = dict(entries)
    header = json.loads(entries["header.json"])
    header["format_version"] = 99
    newer["header.json"] = json.dumps(header).encode()
    del newer["checksum.sha256"]
    newer["checksum.sha256"] = orrery._model._checksum(newer).encode()
    with pytest.raises(ValueError, match="format 99.*reads formats up to 1"):
        orrery.load(write(newer, "newer.orrery"))
    (tmp_path / "x.orrery").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not an orrery model file"):
        orrery.load(tmp_path / "x.orrery")
    # callbacks belong to the process: not saved; a RandomState cannot be written to a file
    with pytest.raises(ValueError, match="random_state"):
        orrery.TSNE(random_state=np.random.RandomState(0)).save(tmp_path / "r.orrery")
