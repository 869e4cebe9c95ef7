"""What a Python caller relies on beyond the numbers: pickling, the GIL released during a fit, Ctrl-C,
no copy of a C-contiguous float64 input."""
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import orrery
from conftest import blobs, counts, posteriors


@pytest.mark.parametrize("make", [
    lambda: (orrery.HSSNE(perplexity=10, max_iter=100), blobs()[0]),
    lambda: (orrery.PE(), posteriors()[0]),
    lambda: (orrery.PLSV(topics=3, max_iter=30), counts()[0]),
])
def test_a_fitted_estimator_pickles(make):
    est, X = make()
    est.fit(X)
    back = pickle.loads(pickle.dumps(est))
    assert np.array_equal(back.embedding_, est.embedding_)
    assert back.get_params() == est.get_params()
    assert np.array_equal(back.transform(X[:7]), est.transform(X[:7]))


def test_the_gil_is_released_during_a_fit():
    X, _ = blobs(n_per=150)
    ticks = []
    done = threading.Event()

    def fit():
        orrery.HSSNE(perplexity=20, max_iter=600, n_jobs=1).fit(X)
        done.set()

    t = threading.Thread(target=fit)
    t.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.002)
    t.join()
    # Python kept running beside the fit: many ticks, none waiting on the whole fit
    assert len(ticks) > 20
    assert max(np.diff(ticks)) < 0.5


def test_ctrl_c_stops_a_fit_with_keyboard_interrupt():
    code = textwrap.dedent("""
        import sys, time, numpy as np, orrery
        X = np.random.default_rng(0).normal(size=(1500, 20))
        print("fitting", flush=True)
        try:
            orrery.HSSNE(max_iter=100000, optimizer="gradient", n_jobs=1).fit(X)  # ~10 minutes
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(42)
        print("finished", flush=True)
    """)
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "fitting"
    time.sleep(3.0)  # past the affinities, into the iterations
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 42, out
    assert "interrupted" in out


def test_a_projected_float64_input_is_read_in_place():
    # With input.pca the run reads a C-contiguous float64 array in place (the duplicate check and the
    # PCA) and stores only its projection. The fit's peak memory beyond the process's own (which holds
    # the array) then does not grow with the array: two fits of 10,000 points, 400 and 1,600
    # features (30 and 122 MiB), differ by the PCA's d x d covariance (19 MiB), not by the 92 MiB
    # between the arrays that a copy would add.
    code = textwrap.dedent("""
        import sys, numpy as np, orrery
        def peak():
            return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024.0
        X = np.random.default_rng(0).normal(size=(10000, int(sys.argv[1])))
        base = peak()
        orrery.HSSNE(max_iter=1, pca=10, affinities="sparse", n_jobs=2, device="cpu").fit(X)
        print(peak() - base, X.nbytes / 2**20)
    """)
    grown = {}
    for d in (400, 1600):
        out = subprocess.run([sys.executable, "-c", code, str(d)], check=True, capture_output=True, text=True).stdout
        grown[d] = [float(v) for v in out.split()]
    extra = grown[1600][0] - grown[400][0]
    arrays = grown[1600][1] - grown[400][1]
    assert extra < 0.5 * arrays, f"the fit's peak grew {extra:.1f} MiB more for {arrays:.1f} MiB more input: {grown}"
