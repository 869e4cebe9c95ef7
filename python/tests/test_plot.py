"""orrery.plot: the CLI maps' colours and legend; markers below the density threshold, a raster above."""
import numpy as np
import pytest

import orrery
from conftest import blobs

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_classes_take_the_maps_palette_and_unlabelled_points_are_grey():
    from matplotlib.colors import to_hex
    X, y = blobs()
    est = orrery.TSNE(perplexity=10, max_iter=100).fit(X)
    y = y.copy()
    y[:5] = -1
    ax = orrery.plot(est, y, class_names={0: "zero"})
    colours, grey = orrery._core.palette()
    assert to_hex(ax.collections[0].get_facecolor()[0]) == grey  # the unlabelled first, underneath
    for i, c in enumerate(ax.collections[1:]):
        assert to_hex(c.get_facecolor()[0]) == colours[i]
        assert len(c.get_offsets()) == int((y == i).sum())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["zero", "1", "2"]


def test_large_maps_are_a_density_raster_and_3d_maps_get_3d_axes():
    rng = np.random.RandomState(0)
    Y = rng.randn(120_000, 2)
    ax = orrery.plot(Y, rng.randint(0, 3, len(Y)), class_names=["a", "b", "c"])
    assert len(ax.images) == 1 and len(ax.collections) == 0
    img = ax.images[0].get_array()
    assert img.shape == (400, 400, 4) and 0 <= img[..., 3].min() and img[..., 3].max() == 1.0
    ax3 = orrery.plot(rng.randn(50, 3))
    assert ax3.name == "3d"
    with pytest.raises(ValueError, match="shape"):
        orrery.plot(rng.randn(10, 4))
    with pytest.raises(ValueError, match="labels"):
        orrery.plot(rng.randn(10, 2), labels=[0, 1])


def test_to_html_writes_the_runs_interactive_page_and_it_survives_a_model_file(tmp_path):
    X, y = blobs()
    names = np.array(["ant", "bee", "cat"])[y]
    est = orrery.TSNE(perplexity=10, max_iter=100).fit(X, names)
    est.to_html(tmp_path / "map.html")
    page = (tmp_path / "map.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert '"groups":["ant","bee","cat"]' in page and '"method":"hssne"' in page
    est.save(tmp_path / "m.orrery")
    orrery.load(tmp_path / "m.orrery").to_html(tmp_path / "again.html")
    assert (tmp_path / "again.html").read_text() == page
    P, labels = __import__("conftest").posteriors()
    pe = orrery.PE(random_state=3).fit(P, labels)
    pe.to_html(tmp_path / "pe.html")
    assert '"marker_kind":"class"' in (tmp_path / "pe.html").read_text()
