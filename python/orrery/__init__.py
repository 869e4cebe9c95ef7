"""orrery: faithful 2-D/3-D maps of large collections.

Estimators with scikit-learn's conventions (fit, fit_transform, transform, get_params/set_params):
PE (objects and classes from class posteriors), PLSV (documents and topics of a corpus), HSSNE and
TSNE (neighbor embeddings with a heavy-tail family), NeRV and SNeRV (precision/recall trade-off,
supervised). `evaluate` scores any map against its input; `plot` draws one (matplotlib); `read_matrix` reads a matrix file as a
run does. Each keyword parameter is the engine's
field of the same name (`orrery defaults TABLE` lists them); `dim` is called n_components.
"""
from . import _core
from ._estimators import HSSNE, NeRV, PE, PLSV, SNeRV, TSNE
from ._evaluate import evaluate
from ._anndata import embed_anndata
from ._plot import plot
from ._model import load

__version__ = _core.__version__
read_matrix = _core.read_matrix  # read_matrix(path, limit=0): npy, IDX, csv/tsv/txt (gzipped too), as runs read them
__all__ = ["PE", "PLSV", "HSSNE", "TSNE", "NeRV", "SNeRV", "evaluate", "embed_anndata", "plot", "load", "read_matrix",
           "__version__"]
