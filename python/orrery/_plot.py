"""A picture of a map from Python, in the colours of the CLI's SVG and HTML maps."""
import numpy as np

from . import _core

# Above this many points a map is drawn as a density raster: 10^6 markers take minutes and bury the
# structure under overplotting.
DENSITY_ABOVE = 100_000


def _map_of(est_or_Y):
    Y = getattr(est_or_Y, "embedding_", est_or_Y)
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] not in (2, 3):
        raise ValueError(f"plot: expected a fitted estimator or an N x 2 (or N x 3) map, found shape {Y.shape}")
    if not np.isfinite(Y).all():
        raise ValueError("plot: the map holds NaN or infinity")
    return Y


def plot(est_or_Y, labels=None, *, ax=None, class_names=None, title=None, marker_size=None, legend=True,
         density_above=DENSITY_ABOVE, bins=400):
    """Draws a map with matplotlib and returns the Axes.

    Parameters
    ----------
    est_or_Y : a fitted orrery estimator (its embedding_) or an N x 2 / N x 3 array
    labels : N class labels (integers, -1 unknown, or names), optional: one colour per class, in the
        palette and order of the CLI's maps (classes ascending; unlabelled points grey)
    ax : a matplotlib Axes to draw into (a 3-D one for a 3-D map); default a new figure's
    class_names : names of the classes in the legend, by label value (a dict) or by class order (a list)
    title, marker_size, legend : as usual; marker_size defaults to a size that suits N
    density_above : above this many points a 2-D map is a density raster (bins x bins pixels: each
        pixel the colour of its most frequent class, its opacity the log of its count), not markers
    """
    import matplotlib.pyplot as plt

    Y = _map_of(est_or_Y)
    n, dim = Y.shape
    colours, grey = _core.palette()
    if labels is None:
        lab = np.zeros(n, dtype=np.int64)
        classes = [0]
        names = [None]
    else:
        raw = np.asarray(labels)
        if raw.shape != (n,):
            raise ValueError(f"labels: expected {n} labels (one per point), found shape {raw.shape}")
        known = raw != -1 if np.issubdtype(raw.dtype, np.number) else np.ones(n, dtype=bool)
        classes = list(np.unique(raw[known]))
        index = {c: i for i, c in enumerate(classes)}
        lab = np.array([index[v] if k else -1 for v, k in zip(raw.tolist(), known.tolist())], dtype=np.int64)
        if isinstance(class_names, dict):
            names = [str(class_names.get(c, c)) for c in classes]
        elif class_names is not None:
            names = [str(class_names[i]) if i < len(class_names) else str(c) for i, c in enumerate(classes)]
        else:
            names = [str(c) for c in classes]
    if ax is None:
        fig = plt.figure(figsize=(7, 6))
        ax = fig.add_subplot(projection="3d" if dim == 3 else None)
    colour = [colours[i % len(colours)] for i in range(len(classes))]
    scale = 1.0
    if dim == 2 and n > density_above:
        _density(ax, Y, lab, colour, grey, bins)
        handles = [plt.Line2D([], [], ls="", marker="s", markersize=6, color=c) for c in colour]
    else:
        size = marker_size if marker_size is not None else float(np.clip(3e4 / max(n, 1), 0.5, 30))
        handles = []
        if (lab < 0).any():
            pts = Y[lab < 0]
            ax.scatter(*pts.T, s=size, c=grey, linewidths=0, label="unlabelled")
        for i, c in enumerate(colour):
            pts = Y[lab == i]
            handles.append(ax.scatter(*pts.T, s=size, c=c, linewidths=0))
        scale = max(1.0, 6.0 / np.sqrt(size))  # legend markers about 6 points wide whatever N
    if labels is not None and legend:
        ax.legend(handles, names, loc="best", fontsize="small", markerscale=scale)
    if title:
        ax.set_title(title)
    if dim == 2:
        ax.set_aspect("equal", adjustable="datalim")
    return ax


def _density(ax, Y, lab, colour, grey, bins):
    """Each pixel the colour of its most frequent class (grey: unlabelled), opacity log(1 + count)."""
    from matplotlib.colors import to_rgb

    lo, hi = Y.min(0), Y.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ij = np.minimum(((Y - lo) / span * bins).astype(np.int64), bins - 1)
    cell = ij[:, 1] * bins + ij[:, 0]
    k = len(colour) + 1  # the last: unlabelled
    counts = np.zeros((bins * bins, k))
    np.add.at(counts, (cell, np.where(lab < 0, k - 1, lab)), 1.0)
    total = counts.sum(1)
    rgb = np.array([to_rgb(c) for c in colour] + [to_rgb(grey)])
    img = np.ones((bins * bins, 4))
    img[:, :3] = rgb[counts.argmax(1)]
    img[:, 3] = np.log1p(total) / max(np.log1p(total.max()), 1e-12)
    ax.imshow(img.reshape(bins, bins, 4), origin="lower", extent=(lo[0], hi[0], lo[1], hi[1]),
              interpolation="nearest", aspect="auto")
