#!/usr/bin/python3
"""Times umap-learn (Debian umap-learn) on X.npy with its defaults (15 neighbors, min_dist 0.1, its own
epoch count) and THREADS threads (0: all cores), writes the map to OUT.npy and prints one JSON line.
No random_state is given: umap-learn runs single-threaded when one is, and users who pick UMAP for
speed run it without; so its maps differ from run to run. PERPLEXITY, ITERS and SEED are taken for the
peers' common command line and not used (UMAP has no perplexity, and its epochs are its own choice).
Run with Debian's python3: umap_peer.py X.npy labels.npy PERPLEXITY ITERS SEED THREADS OUT.npy
"seconds" covers the whole fit_transform (its neighbor search, the graph, the spectral start, the
epochs) but not the import of umap (numba's start-up), which happens before the clock starts."""
import json
import sys
import time

import numpy as np
import umap  # noqa: E402 - numba compiles on import: kept outside the timing

X = np.load(sys.argv[1])
threads, out = int(sys.argv[6]), sys.argv[7]
if threads > 0:
    import numba
    numba.set_num_threads(threads)
t0 = time.perf_counter()
Y = umap.UMAP(n_components=2, n_jobs=threads if threads > 0 else -1).fit_transform(X)
seconds = time.perf_counter() - t0
np.save(out, np.asarray(Y, dtype=np.float64))
print(json.dumps({"umap": umap.__version__, "n": int(X.shape[0]), "threads": threads, "seconds": seconds}))
