"""orrery: faithful 2-D/3-D maps of large collections.

Estimators with scikit-learn's conventions (fit, fit_transform, transform, get_params/set_params):
PE (objects and classes from class posteriors), PLSV (documents and topics of a corpus), HSSNE and
TSNE (neighbour embeddings with a heavy-tail family), NeRV and SNeRV (precision/recall trade-off,
supervised). `evaluate` scores any map against its input. Each keyword parameter is the engine's
field of the same name (`orrery defaults TABLE` lists them); `dim` is called n_components.
"""
from . import _core
from ._estimators import HSSNE, NeRV, PE, PLSV, SNeRV, TSNE
from ._evaluate import evaluate
from ._anndata import embed_anndata

__version__ = _core.__version__
__all__ = ["PE", "PLSV", "HSSNE", "TSNE", "NeRV", "SNeRV", "evaluate", "embed_anndata", "__version__"]
