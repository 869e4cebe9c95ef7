#!/usr/bin/python3
"""Times scikit-learn's TSNE (method exact or barnes_hut) on X.npy with the given perplexity and
iterations and random seed, scores its map by leave-one-out 5-NN accuracy against labels.npy, writes
the map to OUT.npy (so the caller can score it with its own measure too) and prints one JSON line.
Run with Debian's python3 (python3-sklearn):
sklearn_tsne.py X.npy labels.npy METHOD PERPLEXITY ITERS SEED OUT.npy"""
import json
import sys
import time

import numpy as np
import sklearn
from sklearn.manifold import TSNE
from sklearn.neighbors import NearestNeighbors

X = np.load(sys.argv[1])
y = np.load(sys.argv[2]).astype(int).ravel()
method, perplexity, iters = sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
seed, out = int(sys.argv[6]), sys.argv[7]
t0 = time.perf_counter()
Y = TSNE(n_components=2, perplexity=perplexity, method=method, n_iter=iters, init="random",
         learning_rate=200.0, random_state=seed).fit_transform(X)
seconds = time.perf_counter() - t0
np.save(out, Y.astype(np.float64))
nn = NearestNeighbors(n_neighbors=6).fit(Y)
_, idx = nn.kneighbors(Y)
hits = 0
for i in range(len(y)):
    votes = np.bincount(y[idx[i, 1:6]], minlength=y.max() + 1)
    hits += int(np.argmax(votes) == y[i])
print(json.dumps({"sklearn": sklearn.__version__, "method": method, "n": int(X.shape[0]), "iterations": iters, "seed": seed,
                  "seconds": seconds, "knn5_accuracy": hits / len(y)}))
