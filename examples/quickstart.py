"""orrery from Python in five steps, on the 10,000 Fashion-MNIST test images.

    /usr/bin/python3 examples/quickstart.py [--n N] [--out DIR]

(with the package installed, or PYTHONPATH=build/python in a checkout). The images come from Debian's
dataset-fashion-mnist package (scripts/setup.sh installs it). Prints what each step made and, where
matplotlib is installed, saves DIR/quickstart.png: the PE map of objects and classes beside the t-SNE
map.
"""
import argparse
import os
import time

import numpy as np

import orrery

DATA = "/usr/share/datasets/fashion-mnist"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000, help="images to map (the first N of the test set)")
    ap.add_argument("--out", default="runs/quickstart", help="where the picture goes")
    args = ap.parse_args()

    X = orrery.read_matrix(f"{DATA}/t10k-images-idx3-ubyte.gz", args.n) / 255.0
    y = orrery.read_matrix(f"{DATA}/t10k-labels-idx1-ubyte.gz", args.n)[:, 0].astype(np.int64)
    print(f"1. data: {X.shape[0]} images of {X.shape[1]} pixels, {len(np.unique(y))} classes")

    # 2. PE: class posteriors from a posterior model fitted on the images, then objects and classes
    t = time.perf_counter()
    pe = orrery.PE(posterior_model={"per_class": 10}, random_state=1).fit(X, y)
    print(f"2. PE: {pe.embedding_.shape[0]} objects and {pe.class_coords_.shape[0]} classes mapped "
          f"in {time.perf_counter() - t:.1f}s")

    # 3. t-SNE (HSSNE with alpha = 1) on the first 50 principal components
    t = time.perf_counter()
    tsne = orrery.TSNE(pca=50, random_state=1, verbose=False)
    Y = tsne.fit_transform(X)
    r = tsne.report_["result"]
    print(f"3. t-SNE: {Y.shape[0]} points in {time.perf_counter() - t:.1f}s, KL {r['objective']:.3f} after "
          f"{r['iterations']} iterations ({r['repulsion']} repulsion, {r['optimizer']} optimiser)")

    # 4. quality of both maps against the images
    for name, M in (("PE", pe.embedding_), ("t-SNE", Y)):
        q = orrery.evaluate(X, M, y, k=(5, 10, 20))
        row = q["at_k"][0]
        print(f"4. {name:5s}: trustworthiness(5) {row['trustworthiness']:.3f}, continuity(5) {row['continuity']:.3f}, "
              f"5-NN accuracy {row['knn_accuracy']:.3f}")

    # 5. new images placed into the t-SNE map (the map stays fixed)
    extra = orrery.read_matrix(f"{DATA}/train-images-idx3-ubyte.gz", 500) / 255.0
    placed = tsne.transform(extra)
    print(f"5. placed {placed.shape[0]} training images into the map")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no picture)")
        return
    os.makedirs(args.out, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(14, 6.5))
    cmap = plt.get_cmap("tab10")
    for ax, M, title in ((axes[0], pe.embedding_, "PE: objects and classes"), (axes[1], Y, "t-SNE")):
        for c in range(10):
            sel = y == c
            ax.scatter(M[sel, 0], M[sel, 1], s=2, color=cmap(c), label=CLASSES[c])
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
    for c, (u, v) in enumerate(pe.class_coords_):
        axes[0].scatter([u], [v], s=120, marker="*", color=cmap(c), edgecolor="black")
        axes[0].annotate(CLASSES[c], (u, v), fontsize=9, xytext=(4, 4), textcoords="offset points")
    axes[1].legend(markerscale=5, fontsize=8, loc="best")
    fig.tight_layout()
    path = os.path.join(args.out, "quickstart.png")
    fig.savefig(path, dpi=90)
    print(f"picture: {path}")


if __name__ == "__main__":
    main()
