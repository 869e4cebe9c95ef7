#!/usr/bin/env python3
"""The interactive map at scale: how long a page of N points takes to open and to pan.

For each N it writes a run directory as an HSSNE run of N points would leave it (embedding.npy: a
2-D mixture of 10 Gaussian clusters; labels; names "point <i>"; report.json), has `orrery view`
write its page (timed; bytes per point), then loads the page in headless Chromium (software WebGL,
SwiftShader, as on a machine without a GPU) with the page's own "#bench" fragment: the time from
navigation to the end of the first frame (gl.finish and a pixel read back, so the frame is drawn,
not just queued), then 30 drag steps and 10 wheel steps, each timed to the end of its frame. The
process's wall time from launch to the DOM dump is printed beside the page's own first-frame time.

    /usr/bin/python3 bench/viewer_bench.py --cli build/orrery --n 10000,100000,1000000 \
        --out bench/results/viewer-cpu.json
"""
import argparse
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

import numpy as np

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--use-angle=swiftshader",
         "--window-size=1280,800", "--hide-scrollbars"]


def make_run(root, n, seed=1):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    centres = rng.normal(scale=30.0, size=(10, 2))
    Y = centres[labels] + rng.normal(scale=4.0, size=(n, 2))
    root.mkdir(parents=True, exist_ok=True)
    np.save(root / "embedding.npy", Y)
    np.savetxt(root / "labels.txt", labels, fmt="%d")
    (root / "names.txt").write_text("".join(f"point {i}\n" for i in range(n)))
    config = {"method": "hssne",
              "input": {"vectors": str(root / "vectors.npy"), "labels": str(root / "labels.txt"),
                        "names": str(root / "names.txt"),
                        "class_names": [f"cluster {c}" for c in range(10)]},
              "params": {}, "output": {"dir": str(root)}, "device": "cpu", "seed": seed}
    report = {"method": "hssne", "config_file": str(root / "config.json"), "config": config,
              "params": {"alpha": 1.0}, "input": {"points": n}}
    (root / "report.json").write_text(json.dumps(report))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default="build/orrery")
    ap.add_argument("--n", default="10000,100000,1000000")
    ap.add_argument("--out", default="")
    ap.add_argument("--budget", type=int, default=120, help="seconds Chromium may take per page")
    a = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("viewer_bench: Chromium is not installed (scripts/setup.sh installs it)")
    records = []
    print(f"{'N':>9} {'view_s':>7} {'MB':>7} {'B/point':>8} {'first_frame_s':>13} {'wall_s':>7} "
          f"{'pan_median_ms':>13} {'pan_max_ms':>10} {'zoom_median_ms':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(v) for v in a.n.split(",")):
            run = pathlib.Path(tmp) / f"run{n}"
            make_run(run, n)
            page = run / "map.html"
            t0 = time.perf_counter()
            subprocess.run([a.cli, "view", str(run), "--quiet"], check=True)
            view_s = time.perf_counter() - t0
            size = page.stat().st_size
            t0 = time.perf_counter()
            out = subprocess.run([chromium, *FLAGS, f"--timeout={a.budget * 1000}", "--dump-dom",
                                  page.resolve().as_uri() + "#bench"],
                                 capture_output=True, text=True, timeout=a.budget + 60)
            wall = time.perf_counter() - t0
            found = re.findall(r'<pre id="orrery-result"[^>]*>(\{.*?)</pre>', out.stdout, re.S)
            if not found:
                raise SystemExit(f"viewer_bench: the page reported nothing for N = {n}:\n{out.stderr[-2000:]}")
            r = json.loads(html.unescape(found[-1]))
            zoom = sorted(r.get("zoom_ms", [float("nan")]))
            rec = {"bench": "viewer", "n": n, "view_seconds": view_s, "bytes": size, "bytes_per_point": size / n,
                   "first_frame_ms": r["first_frame_ms"], "chromium_wall_seconds": wall,
                   "pan_ms": r["pan_ms"], "pan_median_ms": r["pan_median_ms"], "pan_max_ms": r["pan_max_ms"],
                   "zoom_ms": r.get("zoom_ms"), "zoom_median_ms": zoom[len(zoom) // 2], "errors": r.get("errors", []),
                   "page": {k: v for k, v in r.items() if not isinstance(v, list)},
                   "chromium": subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout.strip(),
                   "cpus": os.cpu_count()}
            records.append(rec)
            print(f"{n:>9} {view_s:>7.2f} {size / 1e6:>7.1f} {size / n:>8.1f} {r['first_frame_ms'] / 1e3:>13.2f} "
                  f"{wall:>7.1f} {r['pan_median_ms']:>13.1f} {r['pan_max_ms']:>10.1f} {rec['zoom_median_ms']:>14.1f}",
                  flush=True)
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
