#!/usr/bin/python3
"""Times scikit-learn's trustworthiness (and continuity, as trustworthiness with the spaces
swapped) on the arrays orrery_bench wrote, and prints one JSON line. Run with Debian's python3,
which has python3-sklearn: /usr/bin/python3 bench/sklearn_trustworthiness.py X.npy Y.npy K"""
import json
import sys
import time

import numpy as np
import sklearn
from sklearn.manifold import trustworthiness

X = np.load(sys.argv[1])
Y = np.load(sys.argv[2])
k = int(sys.argv[3])
t0 = time.perf_counter()
t = trustworthiness(X, Y, n_neighbors=k)
t1 = time.perf_counter()
c = trustworthiness(Y, X, n_neighbors=k)
t2 = time.perf_counter()
print(json.dumps({"sklearn": sklearn.__version__, "n": int(X.shape[0]), "k": k, "trustworthiness": t,
                  "continuity": c, "seconds_trustworthiness": t1 - t0, "seconds_continuity": t2 - t1}))
