"""The interactive map (map.html) in a real browser.

Headless Chromium (software WebGL) loads the pages that `orrery run` writes with output.html for
small generated runs of every method, 2-D and 3-D, and the page's own test fragment reports back
(host/report/viewer/page.html, "#test="): no console errors, every point drawn, a hover at a
known point's screen position shows that point's name, a legend toggle hides exactly its group's
points. Screenshots are non-blank and change when a group is hidden. `orrery view RUN_DIR` writes
the same bytes as the run did. The same checks run with WebGL disabled, where the page draws with
Canvas 2D, and a map above the fallback's limit draws its documented subsample and says so. Skipped,
with the reason, where Chromium is absent.
"""
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import urllib.parse

import numpy as np
import pytest

CLI = os.environ.get("ORRERY_CLI", str(pathlib.Path(__file__).resolve().parents[2] / "build" / "orrery"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (scripts/setup.sh installs it)")
COMMON = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=30000", "--window-size=1000,700",
          "--hide-scrollbars"]
FLAGS = COMMON + ["--enable-unsafe-swiftshader", "--use-angle=swiftshader"]  # WebGL2 in software
NO_WEBGL = COMMON + ["--disable-webgl", "--disable-3d-apis"]  # getContext('webgl2') is null: Canvas 2D
CLASSES = ["alpha", "beta", "gamma", "delta"]
SIZES = [40, 55, 70, 85]  # points per class: a toggle's count identifies its group


def chromium(args, flags=FLAGS):
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=180)


def page_result(page, fragment, flags=FLAGS):
    """Loads PAGE#FRAGMENT and returns what the page's test script reported."""
    out = chromium(["--dump-dom", page.resolve().as_uri() + "#" + fragment], flags)
    found = re.findall(r'<pre id="orrery-result"[^>]*>(\{.*?)</pre>', out.stdout, re.S)
    assert found, f"the page reported nothing; chromium exit {out.returncode}, stderr tail:\n{out.stderr[-2000:]}"
    return json.loads(html.unescape(found[-1]))


def run_cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


class Run:
    def __init__(self, directory, coords_name, names, groups, n):
        self.dir, self.coords_name, self.names, self.groups, self.n = directory, coords_name, names, groups, n
        self.page = directory / "map.html"

    def coords(self):
        return np.load(self.dir / f"{self.coords_name}.npy")

    def isolated_point(self):
        """The point farthest from its nearest neighbor: nothing else lies under it on screen."""
        y = self.coords()
        d = ((y[:, None, :] - y[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(d, np.inf)
        return int(np.argmax(d.min(1)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewer")
    rng = np.random.default_rng(7)
    labels = np.concatenate([np.full(s, c) for c, s in enumerate(SIZES)])
    rng.shuffle(labels)
    n = labels.size
    centres = rng.normal(scale=6.0, size=(len(SIZES), 10))
    X = centres[labels] + rng.normal(size=(n, 10))
    names = [f"point-{i:03d}" for i in range(n)]
    np.save(root / "X.npy", X)
    np.savetxt(root / "labels.txt", labels, fmt="%d")
    (root / "names.txt").write_text("\n".join(names) + "\n")
    # PE: posteriors from distances to the class centres
    logits = -0.05 * ((X[:, None, :] - centres[None]) ** 2).sum(-1)
    P = np.exp(logits - logits.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    P = 0.9 * P + 0.1 / len(SIZES)
    np.savetxt(root / "posteriors.csv", P, delimiter=",", fmt="%.17g")
    # PLSV: one document per line, each from its class's words
    words = [[f"{c}word{j}" for j in range(12)] for c in CLASSES]
    docs = [" ".join(rng.choice(words[l], size=15)) for l in labels]
    (root / "docs.txt").write_text("\n".join(docs) + "\n")
    (root / "doc_labels.txt").write_text("\n".join(CLASSES[l] for l in labels) + "\n")

    def config(name, method, inp, params):
        cfg = {"method": method, "input": inp, "params": params,
               "output": {"dir": str(root / name), "html": True}, "device": "cpu", "threads": 2, "seed": 3}
        path = root / f"{name}.json"
        path.write_text(json.dumps(cfg))
        run_cli("run", str(path), "--quiet")
        return root / name

    ne_in = {"vectors": str(root / "X.npy"), "labels": str(root / "labels.txt"), "names": str(root / "names.txt"),
             "class_names": CLASSES, "perplexity": 10}
    out = {}
    out["hssne"] = Run(config("hssne", "hssne", ne_in, {"max_iter": 150}), "embedding", names, labels, n)
    out["hssne3d"] = Run(config("hssne3d", "hssne", ne_in, {"max_iter": 150, "dim": 3}), "embedding", names, labels, n)
    out["nerv"] = Run(config("nerv", "nerv", ne_in, {"max_iter": 40}), "embedding", names, labels, n)
    out["snerv"] = Run(config("snerv", "snerv", ne_in, {"max_iter": 40}), "embedding", names, labels, n)
    out["pe"] = Run(config("pe", "pe", {"posteriors": str(root / "posteriors.csv"), "labels": str(root / "labels.txt"),
                                        "names": str(root / "names.txt"), "class_names": CLASSES},
                           {"max_iter": 50}), "objects", names, labels, n)
    # label names are numbered in byte order (alpha, beta, delta, gamma)
    by_name = np.array([sorted(CLASSES).index(c) for c in CLASSES])[labels]
    out["plsv"] = Run(config("plsv", "plsv", {"corpus": str(root / "docs.txt"), "labels": str(root / "doc_labels.txt")},
                             {"topics": 4, "max_iter": 20}), "documents", [f"line {i + 1}" for i in range(n)], by_name, n)
    return out


@pytest.mark.parametrize("name", ["hssne", "hssne3d", "nerv", "snerv", "pe", "plsv"])
def test_page_draws_every_point_hovers_and_toggles(runs, name):
    run = runs[name]
    i, g = run.isolated_point(), 2
    r = page_result(run.page, "test=" + urllib.parse.quote(json.dumps({"hover": i, "toggle": g})))
    assert r["errors"] == [], r["errors"]
    assert r["renderer"] == "webgl2" and "note" not in r
    assert r["n"] == run.n and r["drawn"] == run.n
    assert run.names[i] in r["hover"]["tooltip"], r["hover"]
    assert r["after_toggle"]["drawn"] == run.n - int((run.groups == g).sum())


@pytest.mark.parametrize("name", ["hssne3d", "pe"])  # 3-D projected on the CPU; 2-D with PE's tooltips
def test_without_webgl2_the_page_draws_with_canvas_hovers_and_toggles(runs, name):
    run = runs[name]
    i, g = run.isolated_point(), 1
    r = page_result(run.page, "test=" + urllib.parse.quote(json.dumps({"hover": i, "toggle": g})), NO_WEBGL)
    assert r["errors"] == [], r["errors"]
    assert r["renderer"] == "canvas2d", r  # WebGL2 really was missing
    assert "WebGL2 is not available" in r["note"]
    assert r["n"] == run.n and r["drawn"] == run.n
    assert run.names[i] in r["hover"]["tooltip"], r["hover"]
    assert r["after_toggle"]["drawn"] == run.n - int((run.groups == g).sum())


def canvas_limit(page):
    """The fallback's documented number of points, as the page itself holds it."""
    return int(re.search(r"const CANVAS_MAX_POINTS = (\d+);", page.read_text()).group(1))


def test_without_webgl2_a_large_map_draws_a_fixed_subsample_and_says_so(runs, tmp_path):
    limit = canvas_limit(runs["hssne"].page)
    n = limit + limit // 10
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 4, size=n)
    y = rng.normal(scale=20.0, size=(4, 2))[labels] + rng.normal(size=(n, 2))
    np.save(tmp_path / "embedding.npy", y)
    np.savetxt(tmp_path / "labels.txt", labels, fmt="%d")
    config = {"method": "hssne", "input": {"vectors": str(tmp_path / "vectors.npy"),
                                           "labels": str(tmp_path / "labels.txt"), "class_names": CLASSES},
              "params": {}, "output": {"dir": str(tmp_path)}, "device": "cpu", "seed": 1}
    report = {"method": "hssne", "config_file": str(tmp_path / "config.json"), "config": config,
              "params": {"alpha": 1.0}, "input": {"points": n}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    page = tmp_path / "big.html"
    run_cli("view", str(tmp_path), "-o", str(page), "--quiet")
    spec = urllib.parse.quote(json.dumps({"toggle": 0}))
    r = page_result(page, "test=" + spec, NO_WEBGL)
    assert r["errors"] == [], r["errors"]
    assert r["renderer"] == "canvas2d" and r["n"] == n and r["drawn"] == limit
    assert f"drawing {limit:,} of {n:,} points" in r["note"], r["note"]
    # the subsample holds each group in about its share (within 0.01; its standard error is 0.0008)
    share = 1 - r["after_toggle"]["drawn"] / limit
    assert abs(share - (labels == 0).mean()) < 0.01, share


def test_tooltips_carry_the_methods_details(runs):
    pe, plsv = runs["pe"], runs["plsv"]
    i = pe.isolated_point()
    tip = page_result(pe.page, "test=" + urllib.parse.quote(json.dumps({"hover": i})))["hover"]["tooltip"]
    assert CLASSES[pe.groups[i]] in tip  # its label and its most probable classes
    assert re.search(r"0\.\d\d", tip), tip  # with probabilities
    j = plsv.isolated_point()
    tip = page_result(plsv.page, "test=" + urllib.parse.quote(json.dumps({"hover": j})))["hover"]["tooltip"]
    assert f"{sorted(CLASSES)[plsv.groups[j]]}word" in tip  # the document's frequent words


def screenshot(page, fragment, path, flags=FLAGS):
    url = page.resolve().as_uri() + (("#" + fragment) if fragment else "")
    out = chromium([f"--screenshot={path}", url], flags)
    assert path.exists(), out.stderr[-2000:]
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


@pytest.mark.parametrize("name,flags", [("hssne", FLAGS), ("hssne", NO_WEBGL)], ids=["webgl2", "canvas"])
def test_screenshots_show_the_map_and_change_with_a_hidden_group(runs, tmp_path, name, flags):
    run = runs[name]
    shown = screenshot(run.page, "", tmp_path / "all.png", flags)
    hidden = screenshot(run.page, "hide=2", tmp_path / "hidden.png", flags)
    colours = {tuple(c) for c in shown.reshape(-1, 3)[::7]}
    assert len(colours) > 20, "the screenshot is (nearly) blank"
    assert np.abs(shown - hidden).sum(-1).astype(bool).sum() > 200, "hiding a group changed nothing on screen"


def test_view_writes_the_runs_own_page_and_it_is_self_contained(runs, tmp_path):
    for name in ("hssne", "pe", "plsv"):
        run = runs[name]
        out = tmp_path / f"{name}.html"
        run_cli("view", str(run.dir), "-o", str(out), "--quiet")
        assert out.read_bytes() == run.page.read_bytes(), name
    text = runs["hssne"].page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I), "the page loads something from a network"
    assert "fetch(" not in text and "XMLHttpRequest" not in text
