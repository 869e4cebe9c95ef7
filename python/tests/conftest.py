"""Shared data and paths for the Python package's tests (run by ctest as `python`, or by hand:
PYTHONPATH=build/python ORRERY_CLI=build/orrery /usr/bin/python3 -m pytest python/tests)."""
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

SOURCE_DIR = Path(os.environ.get("ORRERY_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def cli():
    """The orrery command line of the same build."""
    path = os.environ.get("ORRERY_CLI") or shutil.which("orrery")
    if not path or not Path(path).exists():
        pytest.skip("ORRERY_CLI is not set to the orrery binary of this build")
    return path


def blobs(n_per=60, d=8, k=3, seed=0):
    """k well separated Gaussian clusters in d dimensions, labels 0..k-1."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 6, (k, d))
    X = np.vstack([c + rng.normal(0, 1, (n_per, d)) for c in centres])
    y = np.repeat(np.arange(k), n_per)
    return X, y


def posteriors(n_per=40, k=3, seed=0):
    """Class posteriors: each object leaning to its class, a few hesitating between two."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(k, 0.3), size=n_per * k)
    y = np.repeat(np.arange(k), n_per)
    P[np.arange(len(y)), y] += 1.5
    P /= P.sum(axis=1, keepdims=True)
    return P, y


def counts(n_docs=80, n_words=50, topics=3, seed=0):
    """A corpus from `topics` disjoint word groups: documents x words counts (dense int), labels."""
    rng = np.random.default_rng(seed)
    groups = np.array_split(np.arange(n_words), topics)
    C = np.zeros((n_docs, n_words), dtype=np.int64)
    y = np.arange(n_docs) % topics
    for i in range(n_docs):
        words = rng.choice(groups[y[i]], size=30)
        np.add.at(C[i], words, 1)
        C[i, rng.integers(0, n_words, 3)] += 1
    return C, y
