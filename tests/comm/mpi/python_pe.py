"""orrery.PE(comm=...) under mpiexec: each process passes its own rows (an uneven split, one process
may pass none) and every process gets the map that one process fitting all the rows makes, bit for
bit, with comm="auto" and with mpi4py's MPI.COMM_WORLD (when mpi4py is installed). Run as
`mpiexec -n G python3 python_pe.py` with the package on PYTHONPATH; exit status 0 on success."""
import sys

import numpy as np

import orrery


def posteriors(n, k, seed=7):
    rng = np.random.RandomState(seed)
    logits = 3 * rng.rand(n, k)
    logits[np.arange(n), rng.randint(0, k, n)] += 2.5
    P = np.exp(logits)
    return P / P.sum(axis=1, keepdims=True), np.arange(n) % k


def main():
    P, y = posteriors(1500, 4)
    whole = orrery.PE(max_iter=30, ftol=0, random_state=3, n_jobs=1).fit(P, y)
    for comm in ["auto"] + (["mpi4py"] if _has_mpi4py() else []):
        if comm == "mpi4py":
            from mpi4py import MPI
            comm = MPI.COMM_WORLD
        rank, ranks = _rank()
        # rank r passes rows [edges[r], edges[r + 1]): rank 0 none when there are several
        edges = [0] + [int(len(P) * (r + 1) ** 2 / ranks ** 2) for r in range(ranks)]
        if ranks > 1:
            edges[1] = 0
        mine = slice(edges[rank], edges[rank + 1])
        est = orrery.PE(comm=comm, max_iter=30, ftol=0, random_state=3, n_jobs=1).fit(P[mine], y[mine])
        assert est.embedding_.shape == whole.embedding_.shape, (est.embedding_.shape, whole.embedding_.shape)
        assert np.array_equal(est.embedding_, whole.embedding_), f"rank {rank}: the objects differ ({comm})"
        assert np.array_equal(est.class_coords_, whole.class_coords_), f"rank {rank}: the classes differ ({comm})"
        assert est.report_["comm"]["ranks"] == ranks, est.report_["comm"]
    print(f"python_pe: rank {_rank()[0]} of {_rank()[1]}: the map of one process, bit for bit")
    return 0


def _has_mpi4py():
    try:
        import mpi4py  # noqa: F401
        return True
    except ImportError:
        return False


def _rank():
    import os
    for r, s in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if r in os.environ:
            return int(os.environ[r]), int(os.environ[s])
    return 0, 1


if __name__ == "__main__":
    sys.exit(main())
