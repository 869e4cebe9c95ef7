#!/usr/bin/env python3
"""A model of a sharded HSSNE fit (interpolated repulsion, 2-D) at 10^7-10^9 points on G = 1-64 ranks,
built from measured per-stage costs.

    python3 bench/scale_model.py bench/results/hssne-scale-mixture-1m-stages.json
    python3 bench/scale_model.py --profile h200            # the GPU figures measured on an H200
    python3 bench/scale_model.py RECORDS.json --bandwidth 370,50 --perplexity 30

RECORDS.json is what `orrery_bench hssne-scale --steps 3 --out RECORDS.json` writes: one evaluation at
the final map split into stages (stage_ms) at a measured N. The model scales each stage to N and
splits it as the sharded engine does (HssneEngine::shard, host/cpu/hssne_engine.cpp):

  replicated on every rank:  the FFTs of the summed grid            fft ~ N log N (the grid ~ N in 2-D)
                             (and, where they run, the far points' sums and the tree's build)
  this rank's rows only:     its points' cells and weights, the scatter of their charges, the
                             gather, the attraction over its rows of P, the step
                             (grid_plan + scatter + gather + attraction + pairs) ~ N / G
  communication:             the grid's (D + 1) int64 charges per node all-reduced (a ring moves
                             2 (G - 1) / G of it), the map all-gathered after every step (8 D N
                             bytes) and each row's two totals (16 N bytes), each rank receiving
                             (G - 1) / G of them, at the bus bandwidth given (GB/s): the first
                             figure within a node of up to 8 ranks, the second across nodes; plus
                             a latency per collective.

Memory per rank, as built: P whole on every rank (N k_sym entries of 8-byte index and 8-byte value)
and the rank's rows of the engine's renumbered copy (1 / G of it), five N x D maps (map, previous, trial,
velocity, gains), the per-row sums of two maps ((4 + 2D) N doubles each), and the grid ((3D + 4)
values a node and the FFT's padded buffers, 2^D (D + 2) doubles a node; nodes ~ 0.22 N, SCALE.md's
52 MB grid at 10^7 points).

It prints per-iteration milliseconds and GB per rank, and the speed-up over one rank. It is a model:
it assumes the measured map's density and P's row length at every N, and a collective's time of
bytes / bandwidth + latency (NCCL's bus bandwidth from nccl-tests: 370-480 GB/s on 8 x H100 NVLink;
~50 GB/s per GPU over 400 Gb/s InfiniBand).
"""
import argparse
import json
import math
import sys

# Measured on an NVIDIA H200 (bench/README.md, "Measured on an NVIDIA H200", hssne-scale --source
# mixture --n 1000000 --steps 3): 62.1 ms an iteration, of it the attraction 8.61 ms; the rest (the
# grid's plan, scatter, FFTs and gather, and the step) is counted as FFT, replicated, which
# overstates what does not shard.
H200 = {"device": "cuda H200 (bench/README.md)", "n": 1_000_000,
        "stage_ms": {"grid_plan": 0.0, "scatter": 0.0, "fft": 53.49, "gather": 0.0, "attraction": 8.61, "pairs": 0.0}}

REPLICATED = ("far", "tree")
LOG_SCALED = ("fft",)
SHARDED = ("grid_plan", "scatter", "gather", "attraction", "pairs")


def load_profile(args):
    if args.profile == "h200":
        return H200
    if not args.records:
        sys.exit("scale_model: give a RECORDS.json from `orrery_bench hssne-scale --steps N --out ...`, or --profile h200")
    with open(args.records) as f:
        data = json.load(f)
    records = data if isinstance(data, list) else data.get("records", [data])
    staged = [r for r in records if r.get("stage_ms")]
    if not staged:
        sys.exit(f"scale_model: {args.records}: no record has stage_ms (run hssne-scale with --steps 3)")
    r = max(staged, key=lambda r: r["n"])
    return {"device": r.get("device", "?"), "n": r["n"], "stage_ms": r["stage_ms"]}


def moved_bytes(n, g, dim, nodes_per_point):
    if g == 1:
        return 0.0
    share = (g - 1) / g
    return (8 * dim + 16) * n * share + 2 * share * 8 * (dim + 1) * nodes_per_point * n


def per_iteration_ms(p, n, g, dim, bandwidths, latency_us, nodes_per_point):
    s = p["stage_ms"]
    scale = n / p["n"]
    log_scale = scale * math.log2(n) / math.log2(p["n"])
    replicated = sum(s.get(k, 0.0) for k in REPLICATED) * scale + sum(s.get(k, 0.0) for k in LOG_SCALED) * log_scale
    sharded = sum(s.get(k, 0.0) for k in SHARDED) * scale / g
    bw = bandwidths[0] if g <= 8 else bandwidths[1]
    moved = moved_bytes(n, g, dim, nodes_per_point)
    comm = moved / (bw * 1e9) * 1e3 + (3 * latency_us * 1e-3 * math.ceil(math.log2(g)) if g > 1 else 0.0)
    return replicated + sharded + comm, replicated, sharded, comm


def memory_gb(n, g, dim, row_nonzeros, nodes_per_point):
    p_bytes = (1 + 1 / g) * 16 * row_nonzeros * n
    maps = 5 * 8 * dim * n + 2 * 8 * (4 + 2 * dim) * n
    grid = 8 * ((3 * dim + 4) + 2 ** dim * (dim + 2)) * nodes_per_point * n
    return (p_bytes + maps + grid) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="?", help="orrery_bench hssne-scale --out JSON with stage_ms")
    ap.add_argument("--profile", choices=["h200"], help="use the H200's measured figures instead of a records file")
    ap.add_argument("--points", default="1e7,1e8,1e9")
    ap.add_argument("--ranks", default="1,2,4,8,16,32,64")
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--bandwidth", default="370,50", help="GB/s within a node (<= 8 ranks), across nodes")
    ap.add_argument("--latency-us", type=float, default=20.0, help="per collective step")
    ap.add_argument("--perplexity", type=float, default=30.0,
                    help="P's rows hold about 1.5 x 3 perplexity entries after symmetrisation")
    ap.add_argument("--nodes-per-point", type=float, default=0.22,
                    help="grid nodes per point (2-D: the map grows with N; SCALE.md: ~52 MB of charges at 10^7)")
    args = ap.parse_args()
    p = load_profile(args)
    bandwidths = [float(x) for x in args.bandwidth.split(",")]
    row_nonzeros = 1.5 * 3 * args.perplexity
    points = [int(float(x)) for x in args.points.split(",")]
    ranks = [int(x) for x in args.ranks.split(",")]
    print(f"# HSSNE sharded, {args.dim}-D, per-stage costs measured on {p['device']} at N = {p['n']:,}")
    print(f"# stage ms at that N: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(p["stage_ms"].items()) if v))
    print(f"# bandwidth {bandwidths[0]:g} GB/s within a node, {bandwidths[1]:g} GB/s across; "
          f"latency {args.latency_us:g} us per collective step; P {row_nonzeros:.0f} entries a row")
    print()
    print("| N | ranks | ms / iteration | replicated | sharded | communication | speed-up | GB per rank | MB moved / iteration |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in points:
        one = per_iteration_ms(p, n, 1, args.dim, bandwidths, args.latency_us, args.nodes_per_point)[0]
        for g in ranks:
            t, rep, sh, comm = per_iteration_ms(p, n, g, args.dim, bandwidths, args.latency_us, args.nodes_per_point)
            moved = moved_bytes(n, g, args.dim, args.nodes_per_point) / 1e6
            print(f"| {n:.0e} | {g} | {t:,.1f} | {rep:,.1f} | {sh:,.1f} | {comm:,.2f} | {one / t:.2f}x | "
                  f"{memory_gb(n, g, args.dim, row_nonzeros, args.nodes_per_point):,.1f} | {moved:,.0f} |")
    print()
    print("The FFTs, repeated on every rank, bound the speed-up (Amdahl): giving each of the D + 2 convolutions")
    print("to a different rank is the next step, and holding P by rows (each rank its own) divides its memory by G.")


if __name__ == "__main__":
    main()
