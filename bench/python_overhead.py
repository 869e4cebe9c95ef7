"""The Python package's overhead against the CLI on the same fit.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--n 10000] [--repeats 2]
        [--cli build/orrery] [--threads 2] [--out bench/results/python-overhead.json]

The same HSSNE run (the first N Fashion-MNIST test images as float64, PCA to 50, perplexity 30, 1,000
iterations, the CPU, seed 1) made by `orrery run` from an .npy file and by orrery.HSSNE(...).fit(X)
from the same array in memory, alternately, each in its own process. Reported per side: the fit as
its run reports it (timings.total: read + affinities + fit + evaluate), the whole process's wall
time, and its peak RSS; for Python also the time of the fit() call and the peak RSS grown by it
beyond the process's own (which holds X already). The overhead is fit() against the CLI's process
wall time (what a user waits for either way), and the reports' totals against each other.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def timed(cmd):
    """(wall seconds, peak RSS MiB, stdout) of a command, by /usr/bin/time."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    return wall, float(r.stderr.strip().splitlines()[-1]) / 1024.0, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cli", default="build/orrery")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench/results/python-overhead.json")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="orrery-overhead-")
    import orrery  # PYTHONPATH=build/python
    X = orrery.read_matrix(DATA, a.n) / 255.0
    x_path = os.path.join(tmp, "X.npy")
    np.save(x_path, X)
    params = {"max_iter": 1000}
    config = {"method": "hssne", "input": {"vectors": x_path, "pca": 50, "perplexity": 30}, "params": params,
              "output": {"dir": os.path.join(tmp, "out"), "svg": False}, "device": "cpu", "threads": a.threads,
              "seed": 1}
    config_path = os.path.join(tmp, "config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    py = textwrap.dedent(f"""
        import json, resource, time, numpy as np, orrery
        X = np.load({x_path!r})
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        m = orrery.HSSNE(pca=50, perplexity=30, max_iter=1000, device="cpu", n_jobs={a.threads}, random_state=1).fit(X)
        fit = time.perf_counter() - t
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0
        np.save({os.path.join(tmp, "py.npy")!r}, m.embedding_)
        print(json.dumps({{"fit_call": fit, "rss_grown_mib": grown, "report_total": m.report_["timings"]["total"]}}))
    """)
    runs = []
    for r in range(a.repeats):
        wall, rss, _ = timed([a.cli, "run", config_path, "--quiet"])
        report = json.load(open(os.path.join(tmp, "out", "report.json")))
        cli = {"process_wall": wall, "peak_rss_mib": rss, "report_total": report["timings"]["total"]}
        wall, rss, out = timed([sys.executable, "-c", py])
        p = dict(json.loads(out), process_wall=wall, peak_rss_mib=rss)
        same = bool(np.array_equal(np.load(os.path.join(tmp, "out", "embedding.npy")), np.load(os.path.join(tmp, "py.npy"))))
        runs.append({"cli": cli, "python": p, "same_map": same})
        print(f"run {r + 1}: CLI {cli['process_wall']:.2f}s (report {cli['report_total']:.2f}s, peak {cli['peak_rss_mib']:.0f} MiB)"
              f" | Python fit() {p['fit_call']:.2f}s (report {p['report_total']:.2f}s, process {p['process_wall']:.2f}s, "
              f"peak {p['peak_rss_mib']:.0f} MiB, grown by the fit {p['rss_grown_mib']:.0f} MiB) | same map: {same}",
              flush=True)

    def mean(side, key):
        return statistics.mean(r[side][key] for r in runs)

    summary = {
        "n": a.n, "dims": 784, "repeats": a.repeats, "threads": a.threads, "x_mib": X.nbytes / 2**20,
        "cli_process_wall": mean("cli", "process_wall"), "python_fit_call": mean("python", "fit_call"),
        "cli_report_total": mean("cli", "report_total"), "python_report_total": mean("python", "report_total"),
        "overhead_fit_call_vs_cli_process": mean("python", "fit_call") / mean("cli", "process_wall") - 1.0,
        "overhead_report_totals": mean("python", "report_total") / mean("cli", "report_total") - 1.0,
        "cli_peak_rss_mib": mean("cli", "peak_rss_mib"), "python_peak_rss_mib": mean("python", "peak_rss_mib"),
        "python_rss_grown_by_fit_mib": mean("python", "rss_grown_mib"),
        "same_map_every_run": all(r["same_map"] for r in runs), "runs": runs,
    }
    print(f"overhead: fit() {summary['python_fit_call']:.2f}s against the CLI's process {summary['cli_process_wall']:.2f}s: "
          f"{100 * summary['overhead_fit_call_vs_cli_process']:+.2f}%; report totals "
          f"{100 * summary['overhead_report_totals']:+.2f}%; X is {summary['x_mib']:.0f} MiB, the fit grew Python's peak by "
          f"{summary['python_rss_grown_by_fit_mib']:.0f} MiB (the CLI's whole peak: {summary['cli_peak_rss_mib']:.0f} MiB)")
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
