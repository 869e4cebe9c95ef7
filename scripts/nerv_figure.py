#!/usr/bin/python3
"""The NeRV picture of docs/nerv.md: a map beside its mean precision/recall curve.

Usage: /usr/bin/python3 scripts/nerv_figure.py IMAGES.npy LABELS.txt OUT.png RUN_DIR [RUN_DIR ...]

Each RUN_DIR is an orrery run over IMAGES (its embedding.npy and report.json); the first is drawn.
The curve follows the NeRV paper's retrieval view: for each of 2,000 query points (seeded) the
relevant set is its 20 nearest neighbors in the input (PCA to 50 dimensions, as the runs), the
retrieved set its r nearest in the map, r = 1..100; precision = hits / r and recall = hits / 20,
averaged over the queries. Needs numpy, scikit-learn and matplotlib (Debian: python3-sklearn,
python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA
from sklearn.neighbors import NearestNeighbors

RELEVANT, RETRIEVED, QUERIES = 20, 100, 2000


def curve(X50, Y, queries):
    inp = NearestNeighbors(n_neighbors=RELEVANT + 1).fit(X50).kneighbors(X50[queries], return_distance=False)[:, 1:]
    out = NearestNeighbors(n_neighbors=RETRIEVED + 1).fit(Y).kneighbors(Y[queries], return_distance=False)[:, 1:]
    hits = np.zeros(RETRIEVED)
    for a, b in zip(inp, out):
        hits += np.cumsum(np.isin(b, a))
    hits /= len(queries)
    r = np.arange(1, RETRIEVED + 1)
    return hits / r, hits / RELEVANT


def main():
    images, labels_path, out = sys.argv[1:4]
    runs = sys.argv[4:]
    X = np.load(images).astype(np.float32)
    labels = np.loadtxt(labels_path, dtype=int)
    X50 = PCA(n_components=50, random_state=0).fit_transform(X)
    queries = np.random.default_rng(1).choice(len(X), size=min(QUERIES, len(X)), replace=False)
    fig, (ax_map, ax_pr) = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [1.15, 1]})
    for n, run in enumerate(runs):
        Y = np.load(run + "/embedding.npy")
        rep = json.load(open(run + "/report.json"))
        lam = rep["params"].get("lambda")
        name = f"{rep['method']} lambda {lam}" if lam is not None else f"{rep['method']} alpha {rep['params'].get('alpha')}"
        prec, rec = curve(X50, Y, queries)
        ax_pr.plot(rec, prec, label=name)
        if n == 0:
            ax_map.scatter(Y[:, 0], Y[:, 1], c=labels, cmap="tab10", s=0.3, linewidths=0, rasterized=True)
            ax_map.set_title(f"{name}: {len(Y):,} Fashion-MNIST images")
            ax_map.set_xticks([]), ax_map.set_yticks([])
            names = rep.get("input", {}).get("class_names") or [str(c) for c in range(10)]
            for c in range(labels.max() + 1):
                ax_map.scatter([], [], color=plt.cm.tab10(c / 9), label=names[c], s=20)
            ax_map.legend(loc="lower left", fontsize=7, markerscale=1.5, frameon=False, ncol=2)
    ax_pr.set_xlabel(f"mean recall (hits / {RELEVANT} input neighbors)")
    ax_pr.set_ylabel("mean precision (hits / r map neighbors)")
    ax_pr.set_title(f"each point's {RELEVANT} input neighbors retrieved\nby its r = 1..{RETRIEVED} nearest in the map")
    ax_pr.grid(alpha=0.3)
    ax_pr.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main()
