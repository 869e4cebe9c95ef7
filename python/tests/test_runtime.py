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


def test_a_fit_from_python_holds_the_input_at_most_once_more_than_the_cli(cli, tmp_path):
    # Peak memory of the same fit, from Python (the array in memory) and from `orrery run` (the array
    # in a file): the run layer takes one copy of the array (io::MemoryInputs hands it to the run,
    # which owns it), so Python's peak is at most the array's size above the CLI's, not twice it.
    X = np.random.default_rng(0).normal(size=(3000, 2000))  # 48 MB
    np.save(tmp_path / "X.npy", X)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"method": "hssne", "input": {"vectors": str(tmp_path / "X.npy"), "pca": 10},
                                  "params": {"max_iter": 1}, "output": {"dir": str(tmp_path / "out"), "svg": False},
                                  "device": "cpu", "threads": 1}))
    code = textwrap.dedent(f"""
        import resource, sys, numpy as np, orrery
        X = np.load({str(tmp_path / "X.npy")!r})
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        orrery.HSSNE(max_iter=1, pca=10, n_jobs=1, device="cpu").fit(X)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0)
    """)
    python_mb = float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                     text=True).stdout.strip())
    r = subprocess.run(["/usr/bin/time", "-f", "%M", cli, "run", str(config), "--quiet"], check=True,
                       capture_output=True, text=True)
    cli_mb = float(r.stderr.strip().splitlines()[-1]) / 1024.0
    array_mb = X.nbytes / 2**20
    # the CLI's peak holds the array too: Python's growth above its own baseline (which holds the
    # array) is the run's working memory plus the copy
    assert python_mb < cli_mb + 0.25 * array_mb, (python_mb, cli_mb, array_mb)
