"""Parameters come from the engine's field tables; bad values are refused naming the parameter."""
import subprocess

import numpy as np
import pytest

import orrery
from orrery import _params
from conftest import blobs


def test_defaults_are_the_field_tables(cli):
    # `orrery defaults hssne` prints key, type, default: each default is the estimator's
    out = subprocess.run([cli, "defaults", "hssne"], check=True, capture_output=True, text=True).stdout
    p = orrery.HSSNE().get_params()
    for f in _params.table("hssne"):
        assert f.key in out
        assert p[f.name] == f.default
    assert p["n_components"] == 2 and p["alpha"] == 1.0 and p["perplexity"] == 30.0
    assert orrery.NeRV().get_params()["lam"] == _params.table("nerv", ["lambda"])[0].default


def test_docstrings_carry_the_tables():
    assert "alpha : float, default=1.0" in orrery.HSSNE.__doc__
    assert "n_components : int" in orrery.PE.__doc__


@pytest.mark.parametrize("est,name", [
    (orrery.HSSNE(alpha=-1.0), "alpha"),
    (orrery.HSSNE(alpha=float("inf")), "alpha"),
    (orrery.HSSNE(n_components=5), "n_components"),
    (orrery.HSSNE(optimizer="newton"), "optimizer"),
    (orrery.HSSNE(perplexity=500.0), "perplexity"),
    (orrery.HSSNE(max_iter="many"), "max_iter"),
    (orrery.NeRV(lam=2.0), "lam"),
    (orrery.HSSNE(random_state=-3), "random_state"),
    (orrery.HSSNE(n_jobs=0), "n_jobs"),
    (orrery.HSSNE(device="tpu"), "device"),
])
def test_bad_parameters_raise_value_error_naming_them(est, name):
    X, _ = blobs()
    with pytest.raises(ValueError, match=name):
        est.fit(X)


def test_bad_data_raises_value_error():
    X, y = blobs()
    with pytest.raises(ValueError, match="NaN"):
        orrery.HSSNE().fit(np.where(X > 5, np.nan, X))
    with pytest.raises(ValueError, match="2-D"):
        orrery.HSSNE().fit(X[0])
    with pytest.raises(ValueError, match="labels"):
        orrery.HSSNE(perplexity=10).fit(X, y[:-1])
    with pytest.raises(ValueError, match="y"):
        orrery.SNeRV().fit(X)
    with pytest.raises(ValueError, match="counts"):
        orrery.PLSV().fit(-np.ones((4, 4)))


def test_set_params_and_clone():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone
    m = orrery.HSSNE(alpha=0.3).set_params(perplexity=7.0)
    c = clone(m)
    assert c.get_params() == m.get_params() and c is not m
    assert "alpha=0.3" in repr(m)
    with pytest.raises(ValueError):
        m.set_params(no_such=1)
