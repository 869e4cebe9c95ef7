#!/usr/bin/env bash
# The Python package installed as the README says, offline: a fresh virtual environment that sees
# Debian's numpy/scipy/scikit-learn (--system-site-packages), `pip install --no-build-isolation
# --no-index .` (which builds the extension through CMake: setup.py), then a fit, a transform and a
# pickle round trip from outside the source tree, so that the installed copy is the one imported.
# ORRERY_CMAKE_ARGS passes CMake arguments to that build (default here: -DORRERY_CUDA=OFF, the
# quicker build; the tests of the package itself run against the tree's build in ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
t0=$(date +%s)
ORRERY_CMAKE_ARGS=${ORRERY_CMAKE_ARGS:--DORRERY_CUDA=OFF} \
  "$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index "$root"
echo "test_pip: pip install took $(( $(date +%s) - t0 ))s"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import pickle
import numpy as np
import orrery
assert "venv" in orrery.__file__, orrery.__file__
rng = np.random.default_rng(0)
X = np.vstack([rng.normal(0, 1, (60, 5)), rng.normal(8, 1, (60, 5))])
m = orrery.TSNE(perplexity=10, max_iter=250).fit(X)
assert m.embedding_.shape == (120, 2)
back = pickle.loads(pickle.dumps(m))
assert np.array_equal(back.transform(X[:4]), m.transform(X[:4]))
print(f"test_pip: orrery {orrery.__version__} from {orrery.__file__}: fit, transform and pickle work")
PY
