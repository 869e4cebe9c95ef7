"""orrery.read_matrix reads a matrix file as a run reads it, and names the file when it cannot."""
import gzip

import numpy as np
import pytest

import orrery


def test_reads_npy_and_gzipped_csv_as_written(tmp_path):
    A = np.random.default_rng(0).normal(size=(7, 3))
    np.save(tmp_path / "a.npy", A)
    assert np.array_equal(orrery.read_matrix(str(tmp_path / "a.npy")), A)
    with gzip.open(tmp_path / "a.csv.gz", "wt") as f:
        f.write("\n".join(",".join(repr(v) for v in row) for row in A) + "\n")
    assert np.array_equal(orrery.read_matrix(str(tmp_path / "a.csv.gz")), A)
    assert orrery.read_matrix(str(tmp_path / "a.npy"), 2).shape == (2, 3)


def test_a_bad_file_is_a_value_error_naming_it(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("1,2\n3,x\n")
    with pytest.raises(ValueError, match="bad.csv"):
        orrery.read_matrix(str(p))
