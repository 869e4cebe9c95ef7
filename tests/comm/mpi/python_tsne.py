"""orrery.TSNE(comm=...) under mpiexec: each process passes its own rows of vectors (an uneven
split, one process may pass none) and every process gets the map that one process fitting all the
rows makes, bit for bit, for the exact pairs (with dense P) and the grid (interpolated repulsion,
an HNSW search), with comm="auto" and with mpi4py's MPI.COMM_WORLD (when mpi4py is installed);
orrery.NeRV (exact and truncated pairs) and orrery.SNeRV the same with comm="auto"; sparse input is refused naming comm, and labels passed on some processes only are refused on
every process. Run as `mpiexec -n G python3 python_tsne.py` with the package
on PYTHONPATH; exit status 0 on success."""
import sys

import numpy as np

import orrery
from python_pe import _has_mpi4py, _rank


def clusters(n, d=5, seed=4):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(n, d)
    X[np.arange(n), y] += 6
    return X, y


def main():
    X, y = clusters(360)
    rank, ranks = _rank()
    # rank r passes rows [edges[r], edges[r + 1]): rank 0 none when there are several
    edges = [0] + [int(len(X) * (r + 1) ** 2 / ranks ** 2) for r in range(ranks)]
    if ranks > 1:
        edges[1] = 0
    mine = slice(edges[rank], edges[rank + 1])
    cases = [dict(method="exact", max_iter=60),
             dict(repulsion="interpolated", neighbors="approximate", max_iter=60)]
    for kw in cases:
        whole = orrery.TSNE(random_state=3, n_jobs=1, perplexity=15, **kw).fit(X, y)
        for comm in ["auto"] + (["mpi4py"] if _has_mpi4py() else []):
            if comm == "mpi4py":
                from mpi4py import MPI
                comm = MPI.COMM_WORLD
            est = orrery.TSNE(comm=comm, random_state=3, n_jobs=1, perplexity=15, **kw).fit(X[mine], y[mine])
            assert np.array_equal(est.embedding_, whole.embedding_), f"rank {rank}: the maps differ ({kw}, {comm})"
            assert est.report_["comm"]["ranks"] == ranks, est.report_["comm"]
            assert est.report_["comm"]["rows"] == [len(X) // ranks + (r < len(X) % ranks) for r in range(ranks)]
    for cls, kw in [(orrery.NeRV, dict(max_iter=20)), (orrery.NeRV, dict(pairs="approximate", max_iter=20)),
                    (orrery.SNeRV, dict(max_iter=20))]:
        whole = cls(random_state=3, n_jobs=1, perplexity=15, **kw).fit(X, y)
        est = cls(comm="auto", random_state=3, n_jobs=1, perplexity=15, **kw).fit(X[mine], y[mine])
        assert np.array_equal(est.embedding_, whole.embedding_), f"rank {rank}: the maps differ ({cls.__name__}, {kw})"
        assert est.report_["comm"]["ranks"] == ranks, est.report_["comm"]
        assert est.report_["result"]["iterations"] == whole.report_["result"]["iterations"]
    # labels on some processes only: refused on every process alike (none waits in a gather)
    try:
        orrery.TSNE(comm="auto", max_iter=5).fit(X[mine], y[mine] if rank == ranks - 1 else None)
        assert ranks == 1, "labels on one process of several were not refused"
    except ValueError as e:
        assert ranks > 1 and "labels are passed on every process or on none" in str(e), e
    try:
        import scipy.sparse
        orrery.TSNE(comm="auto", metric="precomputed").fit(scipy.sparse.eye(10, format="csr"))
        raise AssertionError("a sparse neighbor graph under comm was not refused")
    except ValueError as e:
        assert "comm" in str(e), e
    except ImportError:
        pass
    print(f"python_tsne: rank {rank} of {ranks}: the map of one process, bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
