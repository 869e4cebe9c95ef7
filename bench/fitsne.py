#!/usr/bin/python3
"""Times FIt-SNE 1.2.1 (Linderman et al.: Annoy neighbors, FFT-interpolated repulsion) through its own
Python wrapper fast_tsne.py, found in the directory named by the environment variable FITSNE_DIR (its
bin/fast_tsne built there with FFTW), on X.npy with the given perplexity, iterations, seed and threads
and FIt-SNE's defaults otherwise (PCA initialisation, early exaggeration 12 for 250 iterations,
learning rate max(200, N / 12)). Writes the map to OUT.npy, FIt-SNE's output to OUT.npy.log, and
prints one JSON line.
Run with Debian's python3 (python3-numpy; python3-sklearn for fast_tsne's PCA initialisation):
fitsne.py X.npy labels.npy PERPLEXITY ITERS SEED THREADS OUT.npy

"seconds" is the wall time of the whole fast_tsne call: PCA initialisation, data.dat written, the
binary (reads data.dat, Annoy tree, neighbor search and P rows, symmetrised P, gradient descent,
writes result.dat), result.dat read back. The breakdown beside it splits that by the moments the
binary prints its progress (line-buffered through stdbuf, read here as they come), so the file
exchange can be told apart: the *_seconds fields of "stages" add up to "seconds". FIt-SNE's own
figures are kept too: its progress bar's time for the neighbor search with the P rows, and the sum of
its "50 iterations in X seconds" lines for the gradient descent. "cpu_seconds" (the wrapper's and the
binary's user + system time) is inflated less than the wall time on a machine busy with other work."""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import sklearn.decomposition  # noqa: F401  (fast_tsne imports it for its PCA start: loaded here, outside the timing)

FITSNE_DIR = os.environ.get("FITSNE_DIR")
if not FITSNE_DIR or not os.path.isfile(os.path.join(FITSNE_DIR, "fast_tsne.py")):
    sys.exit("fitsne.py: the environment variable FITSNE_DIR must name FIt-SNE's directory (fast_tsne.py "
             "and bin/fast_tsne); it is " + ("unset" if not FITSNE_DIR else "'" + FITSNE_DIR + "'"))
sys.path.insert(0, FITSNE_DIR)
import fast_tsne  # noqa: E402  (found through FITSNE_DIR)

x_path, labels_path = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
perplexity, iters = float(sys.argv[3]), int(sys.argv[4])
seed, threads, out = int(sys.argv[5]), int(sys.argv[6]), os.path.abspath(sys.argv[7])
# fast_tsne packs 3 * perplexity * n_trees as a C int: an integral perplexity must be an int.
if perplexity.is_integer():
    perplexity = int(perplexity)
X = np.load(x_path)


class TimedBinary:
    """Stands in for the subprocess module inside fast_tsne: runs the binary with line-buffered output
    (so each line arrives when printed), keeps its output off our stdout (which carries the JSON) and
    stamps each line with the time it arrived."""

    def __init__(self):
        self.lines = []  # (seconds since the call started, line)
        self.start = self.end = None

    def call(self, args):
        self.start = time.perf_counter()
        proc = subprocess.Popen(["stdbuf", "-oL"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for raw in iter(proc.stdout.readline, b""):
            self.lines.append((time.perf_counter(), raw.decode(errors="replace")))
        rc = proc.wait()
        self.end = time.perf_counter()
        return rc

    def first(self, pattern):
        """Arrival time of the first line matching pattern (None when none did)."""
        return next((t for t, line in self.lines if re.search(pattern, line)), None)


def cpu_seconds():
    """CPU time (user + system) of this process and its finished children: on a machine shared with
    other work, the part of the wall time that was the work itself."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


binary = TimedBinary()
fast_tsne.subprocess = binary
with tempfile.TemporaryDirectory() as work:
    os.chdir(work)  # fast_tsne exchanges data.dat and result.dat in the current directory
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    Y = fast_tsne.fast_tsne(X, perplexity=perplexity, max_iter=iters, seed=seed, nthreads=threads)
    t1 = time.perf_counter()
    cpu1 = cpu_seconds()
np.save(out, np.asarray(Y, dtype=np.float64))
log = "".join(line for _, line in binary.lines)
with open(out + ".log", "w") as f:  # FIt-SNE's own output, beside the map, for a look at what it did
    f.write(log)
if not np.all(np.isfinite(Y)) or "Done." not in log:
    sys.stderr.write(log[-2000:])
    sys.exit("fitsne.py: fast_tsne did not finish")

# Moments the binary announces, in order: tree started, tree built, neighbor search and P rows done
# (the progress bar's line ends with the search: its redraws are joined by carriage returns; its count
# is not atomic across threads, so it may end below 100%), P symmetrised, last iteration printed.
BAR = r"\] \d+% ([0-9.]+)s"
marks = [t0, binary.start, binary.first(r"^Building Annoy tree"), binary.first(r"^Done building tree"),
         binary.first(BAR), binary.first(r"^Input similarities computed"),
         max(t for t, line in binary.lines if line.startswith("Iteration ")), binary.end, t1]
names = ["init_and_write", "read_data", "annoy_build", "knn_and_p_rows", "symmetrize", "gradient_descent",
         "write_result", "read_result"]
if None in marks:  # a message this version of the script does not know: no breakdown, the total stands
    sys.stderr.write("fitsne.py: no stage breakdown (FIt-SNE's progress messages differ)\n")
    stages = None
else:
    stages = {name + "_seconds": b - a for name, a, b in zip(names, marks, marks[1:])}
bar = re.findall(BAR, log)
costs = re.findall(r"\), cost ([-0-9.eE+naif]+)", log)  # FIt-SNE's own KL under its own P, at the last iteration
threads_used = re.search(r"fast_tsne nthreads: (\d+)", log)
print(json.dumps({"fitsne": "1.2.1", "n": int(X.shape[0]), "dims": int(X.shape[1]), "perplexity": perplexity,
                  "iterations": iters, "seed": seed, "threads": int(threads_used.group(1)) if threads_used else None,
                  "seconds": t1 - t0, "cpu_seconds": cpu1 - cpu0, "stages": stages,
                  "fitsne_knn_and_p_rows_seconds": float(bar[-1]) if bar else None,
                  "fitsne_gradient_seconds": sum(float(s) for s in re.findall(r"50 iterations in ([0-9.]+) seconds", log)),
                  "fitsne_final_cost": float(costs[-1]) if costs else None}))
