"""The estimators: scikit-learn's conventions over orrery's run layer.

A fit builds the run's config as `orrery run` reads it (params from the keyword parameters, the
arrays handed over in memory in place of input files) and runs it in process: the same checks,
readers, methods and report as the CLI, so the same input, parameters and seed give the CLI's
result bit for bit on the CPU. A fitted estimator keeps its model (the files `orrery run` would
write for a later input.model) in memory, and transform hands it to the placement run the same way:
neither fit nor transform writes a file. Fitted attributes end in an underscore; `report_` is the
run's report (what report.json holds).
"""
import json
import numbers
import re
import sys

import numpy as np

from . import _model
from ._model import _npy

from . import _core
from . import _params

try:  # scikit-learn's base classes when it is installed: clone(), pipelines, check_estimator
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import TransformerMixin as _TransformerMixin
except ImportError:  # pragma: no cover - exercised where scikit-learn is absent
    _Base = None
    _TransformerMixin = None

__all__ = ["PE", "PLSV", "HSSNE", "TSNE", "NeRV", "SNeRV"]


class _MinimalBase:
    """get_params/set_params/repr as scikit-learn's BaseEstimator gives them, for installs without it."""

    @classmethod
    def _get_param_names(cls):
        return sorted(cls._param_names)

    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in self._get_param_names()}

    def set_params(self, **params):
        for k, v in params.items():
            if k not in self._param_names:
                raise ValueError(f"Invalid parameter {k!r} for estimator {type(self).__name__}")
            setattr(self, k, v)
        return self

    def __repr__(self):
        changed = {k: v for k, v in self.get_params().items() if k not in self._defaults or v != self._defaults[k]}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def fit_transform(self, X, y=None, **fit_params):
        return self.fit(X, y, **fit_params).embedding_


_Bases = (_TransformerMixin, _Base) if _Base is not None else (_MinimalBase,)


_ITERATION_LINE = re.compile(r"^\[\w+\] iter +\d+ ")
_MEMORY_OUTPUT_LINE = re.compile(r"^\[\w+\] wrote mem:")  # the outputs an estimator keeps in memory


class _BarCallback:
    """verbose=True with tqdm installed (Debian python3-tqdm): a progress bar over the iterations
    (tqdm.auto: a widget in Jupyter, a text bar in a terminal), fed as a callback that never stops
    the fit, with the run's other lines (neighbour search, affinities, the result) written above it."""

    def __init__(self, tqdm, total, desc):
        self._bar = tqdm(total=total, desc=desc, unit="it", leave=True)

    def __call__(self, iteration, objective, embedding):
        self._bar.update(max(0, min(iteration, self._bar.total) - self._bar.n))
        self._bar.set_postfix_str(f"cost {objective:.6g}", refresh=False)
        return False

    def write(self, line):
        if not _ITERATION_LINE.match(line) and not _MEMORY_OUTPUT_LINE.match(line):  # the bar shows those
            self._bar.write(line.rstrip("\n"), file=sys.stderr)

    def finish(self, iterations):
        """The iterations the fit ran (the last ones fall between two callbacks)."""
        self._bar.update(max(0, iterations - self._bar.n))

    def close(self):
        self._bar.close()


def _progress_bar(est, config, callbacks):
    """(callback, line writer) for a progress bar where the method reports iterations to callbacks
    and tqdm is installed; None otherwise (the run's lines then go to sys.stderr as they are)."""
    if config["method"] not in ("hssne", "nerv", "snerv"):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    total = next((est._value(f.name) for f in est._param_fields if f.key == "max_iter"), None)
    cb = _BarCallback(tqdm, int(total) if total else None, config["method"])
    return cb, cb.write


def _comm_mode(comm):
    """The run's communicator as its config names it: None one process; "auto" MPI when the
    script was started by mpirun/mpiexec or srun; an mpi4py communicator: MPI_COMM_WORLD's
    processes (the only one a run can take)."""
    if comm is None:
        return "single"
    if isinstance(comm, str):
        if comm not in ("auto", "single", "mpi"):
            raise ValueError(f"comm: expected None, 'auto', 'single', 'mpi' or mpi4py's MPI.COMM_WORLD, found {comm!r}")
        return comm
    if type(comm).__module__.startswith("mpi4py"):
        from mpi4py import MPI
        if MPI.Comm.Compare(comm, MPI.COMM_WORLD) not in (MPI.IDENT, MPI.CONGRUENT):
            raise ValueError("comm: a run spans MPI.COMM_WORLD's processes; this communicator is another group "
                             "(split runs are not supported)")
        return "mpi"
    raise ValueError(f"comm: expected None, 'auto', 'single', 'mpi' or mpi4py's MPI.COMM_WORLD, found {comm!r}")


def _gathered_labels(mode, y, n):
    """Every rank's labels, in rank order (as their rows are gathered)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected {n} labels (one per row this process passes), found shape {y.shape}")
    data = _core.gather_bytes(mode, "\n".join(str(v) for v in y.tolist()).encode() + (b"\n" if n else b""))
    lines = data.decode().split("\n")[:-1]
    return np.asarray(lines, dtype=y.dtype if y.dtype.kind in "iuf" else object)


def _gathered_rows(mode, X, y, affinities, metric):
    """Every process's rows of vectors X (and labels y), in rank order: a run across processes."""
    if affinities is not None or metric == "precomputed" or _is_sparse(X):
        raise ValueError("comm: a fit across processes takes vectors, each process passing its own rows; "
                         "distances, neighbor graphs and affinities are fitted in one process (comm=None)")
    if X is None:
        raise ValueError("fit: X is required")
    local = np.asarray(X, dtype=np.float64)
    if local.ndim != 2:
        raise ValueError(f"X: expected a 2-D array of this process's rows, found shape {local.shape}")
    # whether each process passed labels, asked of all of them first: a process that skipped the
    # labels' gather while the others waited in it would hang the launch
    given = _core.gather_bytes(mode, b"1" if y is not None else b"0")
    if given not in (b"1" * len(given), b"0" * len(given)):
        raise ValueError(f"y: labels are passed on every process or on none; the processes passed {given.decode()} "
                         "(1: labels, in rank order)")
    if y is not None:
        y = _gathered_labels(mode, y, local.shape[0])
    return _core.gather_rows(mode, local), y


def _start_input(value, inputs):
    """An array start (init=Y0, N x n_components) handed to the run in memory as params.init."""
    Y = np.asarray(value, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"init: expected 'random', 'pca', 'spectral' or an N x n_components array, found shape {Y.shape}")
    if not np.isfinite(Y).all():
        raise ValueError("init: the start holds a value that is not a finite number")
    if inputs is None:
        raise ValueError("init: an array start applies to fit only")
    return inputs.add_matrix("init.npy", np.ascontiguousarray(Y))


def _model_input(inputs, files):
    """A fitted model's files (as the CLI writes them in output.dir) handed to a run in memory, under
    the name the run's input.model gives them: nothing is written to disk."""
    for name, data in files.items():
        if isinstance(data, np.ndarray):
            inputs.add_matrix("model/" + name, data)
        else:
            inputs.add_bytes("model/" + name, data)
    return inputs.prefix + "model"


def _dense(X, name="X", min_samples=1):
    """X as a 2-D float64 array: a C-contiguous float64 array as it is, anything else converted once."""
    if _is_sparse(X):
        raise ValueError(f"{name}: a sparse matrix is not accepted here (pass a dense array)")
    A = np.asarray(X)
    if np.iscomplexobj(A):
        raise ValueError(f"{name}: Complex data not supported")
    if A.dtype == object:
        A = A.astype(np.float64)  # numbers held as objects; anything else raises numpy's TypeError
    if not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
        raise ValueError(f"{name}: expected numbers, found an array of {A.dtype}")
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (samples x features), found {A.ndim}-D; reshape a single "
                         "feature with X.reshape(-1, 1) or a single sample with X.reshape(1, -1)")
    if A.shape[1] == 0:
        raise ValueError(f"{name}: found array with 0 feature(s) (shape={A.shape}) while a minimum of 1 is required.")
    if A.shape[0] < min_samples:
        raise ValueError(f"{name}: found array with {A.shape[0]} sample(s) (shape={A.shape}) while a minimum of "
                         f"{min_samples} is required.")
    if not np.isfinite(A).all():
        raise ValueError(f"{name}: holds NaN or infinity")
    return A


def _is_sparse(X):
    return hasattr(X, "tocoo") and hasattr(X, "nnz")


def _label_bytes(y, n, name="y"):
    """Labels as the run's label file would hold them: integers (-1 unknown) or names, one per line."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name}: expected {n} labels (one per sample), found shape {np.asarray(y).shape}")
    if np.issubdtype(y.dtype, np.integer) or y.dtype == bool:
        lines = [str(int(v)) for v in y]
    elif np.issubdtype(y.dtype, np.floating):
        if not np.all(np.isfinite(y)) or not np.all(y == np.floor(y)):
            raise ValueError(f"{name}: expected integer class labels, found non-integer values")
        lines = [str(int(v)) for v in y]
    else:
        lines = [str(v) for v in y]
        if any("\n" in s or s.strip() != s or not s for s in lines):
            raise ValueError(f"{name}: a label name must be non-empty, on one line, without surrounding spaces")
    return ("\n".join(lines) + "\n").encode()


def _seed(random_state):
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state: expected an integer >= 0, found {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    raise ValueError(f"random_state: expected None, an integer >= 0 or a numpy RandomState, found {random_state!r}")


def _threads(n_jobs):
    if n_jobs is None or n_jobs == -1:
        return 0
    if isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool) and n_jobs >= 1:
        return int(n_jobs)
    raise ValueError(f"n_jobs: expected None, -1 (all cores) or an integer >= 1, found {n_jobs!r}")


class _Estimator(*_Bases):
    _method = None
    _param_fields = ()  # fields of the method's params table
    _input_fields = ()  # fields of its input table that are parameters (not data)
    _extra = {}  # Python-only parameters and their defaults
    _param_names = ()
    _defaults = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls._method is None:
            return
        fields = list(cls._param_fields) + list(cls._input_fields)
        cls._defaults = {f.name: f.default for f in fields}
        cls._defaults.update(cls._extra)
        cls._defaults.update({"random_state": None, "device": "auto", "n_jobs": None, "verbose": False})
        cls._param_names = tuple(cls._defaults)
        names = list(cls._defaults)
        # a real signature (scikit-learn's get_params reads __init__'s), keyword-only
        src = "def __init__(self, *, {args}):\n{body}".format(
            args=", ".join(f"{n}=_d[{n!r}]" for n in names),
            body="".join(f"    self.{n} = {n}\n" for n in names) or "    pass\n")
        scope = {"_d": dict(cls._defaults)}
        exec(src, scope)  # noqa: S102 - the names are the engine's field keys
        init = scope["__init__"]
        init.__qualname__ = f"{cls.__name__}.__init__"
        init.__doc__ = cls.__doc__
        cls.__init__ = init
        cls.__doc__ = (cls.__doc__ or "") + "\n\nParameters\n----------\n" + _params.doc_block(fields) + _COMMON_DOC

    # ------------------------------------------------------------------ config

    def _value(self, name):
        """A parameter's value as the run takes it (TSNE maps scikit-learn's names and meanings here)."""
        return getattr(self, name)

    def _check_params(self):
        for f in list(self._param_fields) + list(self._input_fields):
            v = self._value(f.name)
            if f.key == "init" and not isinstance(v, str):
                continue  # an array start, checked when it is handed over (_params_json)
            _params.check_value(f, v)
        if not isinstance(self.device, str):
            raise ValueError(f"device: expected 'auto', 'cpu', 'cuda' or 'cuda:N', found {self.device!r}")
        if not isinstance(self.verbose, (bool, numbers.Integral)):
            raise ValueError(f"verbose: expected True or False, found {self.verbose!r}")

    def _params_json(self, inputs=None):
        out = {}
        for f in self._param_fields:
            v = self._value(f.name)
            if v is None:
                continue
            if f.key == "init" and not isinstance(v, str):
                if self._method not in ("hssne", "nerv", "snerv"):
                    raise ValueError(f"init: an array start is taken by TSNE, HSSNE, NeRV and SNeRV; "
                                     f"{type(self).__name__} takes one of {f.range}")
                out["init"] = _start_input(v, inputs)
            else:
                out[f.key] = _params.to_json(f, v)
        return out

    def _input_json(self):
        # keys left at their defaults are not sent: the run then applies its own default, and a key
        # that only applies to another choice (neighbor_ef with neighbors="exact") is not refused
        return {f.key: _params.to_json(f, self._value(f.name))
                for f in self._input_fields if self._value(f.name) is not None
                and self._value(f.name) != f.default}

    def _run(self, inputs, input_json, params_json=None, output_extra=None, callbacks=None, every=0, comm="single"):
        self._check_params()
        config = {
            "method": self._method,
            "input": input_json,
            "params": self._params_json() if params_json is None else params_json,
            "output": dict({"dir": inputs.prefix + "out", "format": "npy", "svg": False}, **(output_extra or {})),
            "device": self.device,
            "threads": _threads(self.n_jobs),
            "seed": _seed(self.random_state),
            "comm": comm,
        }
        if getattr(self, "comm_timeout", None) is not None:  # the estimators that take comm
            config["comm_timeout"] = self.comm_timeout
        bar = _progress_bar(self, config, callbacks) if self.verbose else None
        write = None
        if bar is not None:
            bar_callback, write = bar
            callbacks = list(callbacks or []) + [bar_callback]
            every = every or 10
        try:
            report, arrays, files = _core.run(config, inputs, not self.verbose, callbacks, every, write)
            report = json.loads(report)
            if bar is not None:
                bar_callback.finish(report.get("result", {}).get("iterations", 0))
        except ValueError as e:
            raise ValueError(_named(str(e))) from None
        finally:
            if bar is not None:
                bar_callback.close()
        return report, arrays, files

    def fit_transform(self, X, y=None, **fit_params):
        """Fits the map and returns the coordinates of the fitted points (embedding_)."""
        return self.fit(X, y, **fit_params).embedding_

    def to_html(self, path):
        """Writes the interactive map of the fit (the page `orrery run` writes with output.html, and
        `orrery view` shows: points coloured by the labels given to fit, PE's classes and PLSV's topics
        as markers, the quality chart) as one self-contained HTML file."""
        self._check_fitted()
        page = getattr(self, "_page", None)
        if page is None:
            raise ValueError("to_html: this estimator holds no page (it was fitted by a version without one); refit it")
        with open(path, "wb") as f:
            f.write(page)
        return self

    # ------------------------------------------------------------------ model files

    def save(self, path):
        """Writes the estimator (parameters, fitted attributes, what transform needs) to one versioned
        model file (orrery/_model.py documents the format); orrery.load(path) reads it back, in this
        or a later orrery. callbacks are not saved."""
        data, _ = _model.to_bytes(self)
        with open(path, "wb") as f:
            f.write(data)
        return self

    def __getstate__(self):
        # a pickle holds the model file's bytes (and the few parameters a file cannot: a RandomState)
        data, dropped = _model.to_bytes(self, skip_unsavable=True)
        return {"orrery_model": data, "objects": {k: getattr(self, k) for k in dropped}}

    def __setstate__(self, state):
        for k, v in self._defaults.items():
            setattr(self, k, v)
        header, entries = _model.read_entries(state["orrery_model"], "pickle")
        _model.restore(self, header, entries)
        for k, v in state.get("objects", {}).items():
            setattr(self, k, v)

    def _check_fitted(self):
        if not hasattr(self, "embedding_"):
            try:
                from sklearn.exceptions import NotFittedError
            except ImportError:  # pragma: no cover
                NotFittedError = AttributeError
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first")

    def _more_tags(self):
        return {"non_deterministic": False, "preserves_dtype": [np.float64]}


def _named(message):
    """An engine message names the config key (params.alpha, input.pca); the estimator's keyword is the
    same but for the renamed ones (dim, lambda)."""
    for key, name in _params.RENAMED.items():
        message = message.replace(f"params.{key}:", f"{name} (params.{key}):")
    return message


_COMMON_DOC = """
random_state : int >= 0, RandomState or None, default=None
    Seed of every random choice (the start, subsamples). None is seed 0: orrery is deterministic, so
    the same input, parameters and seed give the same map on the same device.
device : str, default='auto'
    'auto' (a CUDA device when one is present, else the CPU), 'cpu', 'cuda' or 'cuda:N'.
n_jobs : int or None, default=None
    CPU threads; None or -1 for all cores.
verbose : bool, default=False
    Progress on Python's sys.stderr, which a notebook shows in the cell: for TSNE, HSSNE, NeRV and SNeRV
    with tqdm installed (Debian python3-tqdm, or the `progress` extra) a bar over the iterations (a
    widget in Jupyter) with the neighbour search, affinities and result written above it; otherwise
    the lines `orrery run` prints.
"""


# ---------------------------------------------------------------------- neighbor embeddings


_VECTOR_METRICS = ("euclidean", "cosine", "correlation", "inner_product")
_PAGE = {"html": True}  # every fit keeps its interactive page for to_html


def _ne_inputs(est, X, y, inputs, allow_metric=True, allow_affinities=False, affinities=None):
    """The run's input keys for vectors / a distance matrix / a kNN distance graph X, or finished
    affinities (`affinities`, never guessed from X's type), and labels y."""
    input_json = est._input_json()
    if affinities is not None:
        if not allow_affinities:
            raise ValueError(f"affinities: precomputed affinities are not supported by {type(est).__name__}")
        if X is not None:
            raise ValueError("fit: give X or affinities, not both")
        if not _is_sparse(affinities):
            raise ValueError("affinities: expected a scipy.sparse N x N matrix of affinities")
        coo = affinities.tocoo()
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"affinities: expected a square N x N matrix, found {coo.shape}")
        input_json["affinity_matrix"] = inputs.add_sparse(
            "affinities.mtx", coo.shape[0], coo.shape[1], coo.row.astype(np.int64), coo.col.astype(np.int64),
            coo.data.astype(np.float64))
        n = coo.shape[0]
        for key in ("pca", "perplexity", "affinities", "neighbors", "neighbor_ef", "neighbor_recall_target", "duplicates"):
            input_json.pop(key, None)  # they describe how affinities are made from vectors
    elif X is None:
        raise ValueError("fit: X is required (or affinities=P for finished affinities)")
    elif _is_sparse(X):
        metric = getattr(est, "metric", "euclidean") if allow_metric else "euclidean"
        if metric != "precomputed":
            raise ValueError("X: a sparse matrix is read as a kNN distance graph with metric='precomputed' (as "
                             "scikit-learn's TSNE reads it); finished affinities go through fit(affinities=P); "
                             "sparse vectors are not supported (pass X.toarray())")
        if not allow_affinities:
            raise ValueError(f"X: a sparse neighbor graph is not supported by {type(est).__name__}; pass dense "
                             "vectors or distances")
        coo = X.tocoo()
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"X: metric='precomputed' with a sparse matrix expects a square N x N kNN distance "
                             f"graph, found {coo.shape}")
        input_json["neighbor_graph"] = inputs.add_sparse(
            "neighbor_graph.mtx", coo.shape[0], coo.shape[1], coo.row.astype(np.int64), coo.col.astype(np.int64),
            coo.data.astype(np.float64))
        n = coo.shape[0]
        for key in ("pca", "affinities", "neighbors", "neighbor_ef", "neighbor_recall_target", "duplicates"):
            input_json.pop(key, None)  # the graph's lists are the neighbors; the perplexity calibrates them
    else:
        A = _dense(X, min_samples=2)
        n = A.shape[0]
        est.n_features_in_ = A.shape[1]
        if allow_metric and est.metric == "precomputed":
            if A.shape[0] != A.shape[1]:
                raise ValueError(f"X: metric='precomputed' expects a square distance matrix, found {A.shape}")
            input_json["distances"] = inputs.add_matrix("distances.npy", A)
            for key in ("pca", "neighbors", "neighbor_ef", "neighbor_recall_target"):
                input_json.pop(key, None)
        elif allow_metric and est.metric not in _VECTOR_METRICS:
            raise ValueError(f"metric: expected one of {', '.join(map(repr, _VECTOR_METRICS))} or 'precomputed', "
                             f"found {est.metric!r}")
        else:
            input_json["vectors"] = inputs.add_matrix("X.npy", A)
            if allow_metric and est.metric != "euclidean":
                input_json["metric"] = est.metric
    if y is not None:
        input_json["labels"] = inputs.add_bytes("labels.txt", _label_bytes(y, n))
    return input_json


_NE_INPUT_KEYS = ("pca", "perplexity", "affinities", "neighbors", "neighbor_ef", "neighbor_recall_target", "duplicates")


class HSSNE(_Estimator):
    """Heavy-tailed symmetric SNE (Yang et al., 2009): alpha 0 is SNE's Gaussian, 1 t-SNE's tail.

    fit(X, y=None, affinities=None): X is N x d vectors; with metric='precomputed' an N x N distance
    matrix, or a scipy.sparse kNN distance graph (scikit-learn's kneighbors_graph(mode="distance"),
    Scanpy's obsp["distances"]: each row's stored entries are its neighbors at their distances, rows of
    any length), calibrated to the perplexity on its own lists. Finished affinities go through
    fit(affinities=P) (a scipy.sparse N x N matrix, made symmetric and scaled to sum 1), never through
    X. y, optional, labels (semi-supervised with rho > 0, and the report's k-NN accuracy).
    transform(X_new) places new vectors into the fitted map.

    metric: "euclidean" (default), "cosine", "correlation", "inner_product" (the dot product, a
    similarity: a point's neighbors are the rows of largest inner product with it, itself excluded;
    no pca) or "precomputed"; the CLI's input.metric (docs/hssne.md). transform compares new vectors
    by the fit's metric.

    callbacks: a callable or a list of them, each called every callbacks_every_iters iterations (10)
    as f(iteration, objective, embedding): the iterations done, the objective last recorded (KL; the
    gradient method evaluates it every objective_every iterations, 10, so at a multiple of that it is
    the map's own), and a read-only copy of the map (N x n_components). One that returns True stops the fit there: the
    map at that iteration is the result, and report_["result"]["stop_reason"] is "callback".
    Without callbacks nothing is copied.

    comm (None, "auto", "mpi" or mpi4py's MPI.COMM_WORLD): under `mpirun -n G python script.py` each
    process passes its own rows of X (vectors; labels on every process or none); the map is fitted
    across the processes (README, "Several processes") and every process gets the whole map, rows in
    rank order, the same bits as one process fitting all the rows. Callbacks run on every process
    with the same map and must agree on stopping. None: one process. comm_timeout (seconds, 600; 0:
    no limit): a process that waits longer for the others in one exchange stops the fit on every
    process, naming the processes that never came (a hung rank).
    """

    _method = "hssne"
    _param_fields = tuple(_params.table("hssne"))
    _input_fields = tuple(_params.table("hssne_input", _NE_INPUT_KEYS))
    _extra = {"metric": "euclidean", "callbacks": None, "callbacks_every_iters": 10, "comm": None,
              "comm_timeout": 600.0}

    def _callbacks(self):
        """callbacks (a callable or a list of them) as _core.run takes them, checked."""
        cbs = self.callbacks
        if cbs is None:
            return None, 0
        cbs = [cbs] if callable(cbs) else list(cbs)
        for f in cbs:
            if not callable(f):
                raise ValueError(f"callbacks: expected a callable or a list of callables, found {f!r}")
        every = self.callbacks_every_iters
        if not isinstance(every, numbers.Integral) or isinstance(every, bool) or every < 1:
            raise ValueError(f"callbacks_every_iters: expected an integer >= 1, found {every!r}")
        return cbs, int(every)

    def fit(self, X=None, y=None, affinities=None):
        self._check_params()
        mode = _comm_mode(self.comm)
        if mode != "single":
            X, y = _gathered_rows(mode, X, y, affinities, getattr(self, "metric", "euclidean"))
        inputs = _core.Inputs()
        input_json = _ne_inputs(self, X, y, inputs, allow_affinities=True, affinities=affinities)
        cbs, every = self._callbacks()
        report, arrays, files = self._run(inputs, input_json, params_json=self._params_json(inputs),
                                          output_extra=_PAGE, callbacks=cbs, every=every, comm=mode)
        self._page = files.get("map.html")
        self._set_fitted(report, arrays, files)
        return self

    def _set_fitted(self, report, arrays, files):
        self.embedding_ = arrays["embedding"]
        self.report_ = report
        self.kl_divergence_ = report["result"]["objective"]
        self.n_iter_ = report["result"]["iterations"]
        self._keep_model(files)

    def _keep_model(self, files):
        """What transform needs: the map and the points it was made from (the CLI's model files)."""
        self._model = {k: v for k, v in files.items() if k.startswith("model_") or k == "report.json"}

    def transform(self, X):
        """Places new vectors into the fitted map (the map's points stay fixed); returns their coordinates."""
        self._check_fitted()
        if "model_map.npy" not in self._model:
            raise ValueError("transform: this map was made from distances, a neighbor graph or affinities; only a map of vectors "
                             "can place new points")
        A = _dense(X)
        if A.shape[1] != self.n_features_in_:
            raise ValueError(f"X: {A.shape[1]} features, but this map was fitted on {self.n_features_in_}")
        inputs = _core.Inputs()
        input_json = {"vectors": inputs.add_matrix("X.npy", A), "model": _model_input(inputs, self._model)}
        report, arrays, files = self._run(inputs, input_json, params_json={})
        return arrays["embedding"]


# scikit-learn's TSNE parameters that orrery's TSNE takes under scikit-learn's names (None: not given)
_SKLEARN_TSNE = {"early_exaggeration": None, "angle": None, "method": None, "n_iter_without_progress": None,
                 "min_grad_norm": None, "metric_params": None}


class TSNE(HSSNE):
    """t-SNE: HSSNE with t-SNE's tail (alpha = 1) and defaults (perplexity 30, early exaggeration 12).

    Code written for sklearn.manifold.TSNE runs unchanged: its parameter names are taken with their
    meanings where orrery has them.

    - early_exaggeration: exaggeration (give one of the two).
    - learning_rate="auto": scikit-learn's rule, max(N / early_exaggeration / 4, 50), on the same
      gradient (with its factor 4); a number is the step as in scikit-learn. orrery's own default,
      learning_rate=0, is max(200, N / exaggeration). A learning rate applies to the gradient
      optimiser (optimizer="gradient", which auto takes with the tree and the grid).
    - max_iter, n_components, perplexity, metric ("euclidean", "cosine", "correlation",
      "precomputed": dense distances, or a sparse kNN distance graph), init ("random", "pca",
      "spectral" or an array), n_jobs, verbose, random_state: as in scikit-learn. metric also takes
      "inner_product" (neighbors by largest dot product, as HSSNE's), which scikit-learn's TSNE has not.
    - method="barnes_hut": orrery's repulsion="auto" (exact, Barnes-Hut tree or FFT grid by size,
      docs/hssne.md); method="exact": every pair, dense affinities and exact repulsion, as
      scikit-learn's exact method.
    - angle: the Barnes-Hut tree's opening angle (tree_angle; orrery's cells are judged by their
      farthest point, so 0.4 here is about scikit-learn's 0.5).
    - n_iter_without_progress, min_grad_norm and metric_params are scikit-learn's stopping rules and
      metric options that orrery has no counterpart for: a value other than scikit-learn's default
      is a ValueError naming it. orrery stops at max_iter (and, with the fixed-point optimiser, when
      the objective stalls: tol).

    What differs: init defaults to "random" (scikit-learn: "pca"); kl_divergence_ is the KL of the
    exact P, computed as the optimiser goes (scikit-learn reports its own at the end).
    """

    _param_fields = tuple(f for f in _params.table("hssne") if f.key != "alpha")
    _extra = dict(HSSNE._extra, **_SKLEARN_TSNE)
    _n_points = None  # set by fit, for learning_rate="auto"

    def _value(self, name):
        v = getattr(self, name)
        ee = self.early_exaggeration
        if name == "exaggeration" and ee is not None:
            return ee
        if name == "learning_rate" and isinstance(v, str) and v == "auto":
            if self._n_points is None:
                return 0.0  # checked before the data is seen
            return max(self._n_points / float(ee if ee is not None else self.exaggeration) / 4.0, 50.0)
        if name == "tree_angle" and self.angle is not None:
            return self.angle
        if name == "repulsion" and self.method == "exact":
            return "exact"
        if name == "affinities" and self.method == "exact":
            return "dense"
        return v

    def _check_params(self):
        lr = self.learning_rate
        if isinstance(lr, str) and lr != "auto":
            raise ValueError(f"learning_rate: expected 'auto' or a number, found {lr!r}")
        if self.early_exaggeration is not None and self.exaggeration != self._defaults["exaggeration"]:
            raise ValueError("early_exaggeration: scikit-learn's name for exaggeration; give one of the two")
        if self.angle is not None and self.tree_angle != self._defaults["tree_angle"]:
            raise ValueError("angle: scikit-learn's name for tree_angle; give one of the two")
        if self.method not in (None, "barnes_hut", "exact"):
            raise ValueError(f"method: expected 'barnes_hut' or 'exact', found {self.method!r}")
        if self.method == "exact" and (self.repulsion != "auto" or self.affinities != "auto"):
            raise ValueError("method: 'exact' sets repulsion='exact' and affinities='dense'; leave those at 'auto'")
        for name, default in (("n_iter_without_progress", 300), ("min_grad_norm", 1e-7)):
            v = getattr(self, name)
            if v is not None and v != default:
                raise ValueError(f"{name}: scikit-learn's stopping rule has no counterpart in orrery (it stops at "
                                 f"max_iter, or with the fixed-point optimiser when the objective stalls: tol); "
                                 f"leave it at {default}")
        if self.metric_params is not None:
            raise ValueError("metric_params: orrery's metrics (euclidean, cosine, correlation, inner_product) take no "
                             "parameters")
        super()._check_params()

    def fit(self, X=None, y=None, affinities=None):
        A = affinities if affinities is not None else X
        self._n_points = None if A is None else (A.shape[0] if hasattr(A, "shape") else len(A))
        try:
            return super().fit(X, y, affinities=affinities)
        finally:
            self._n_points = None

    def _params_json(self, inputs=None):
        return dict(super()._params_json(inputs), alpha=1.0)


class NeRV(_Estimator):
    """Neighbor retrieval visualisation (Venna et al., 2010): lambda trades precision for recall.

    fit(X, y=None): X is N x d vectors or an N x N distance matrix (metric='precomputed'); y, optional,
    labels for the report's k-NN accuracy. transform(X_new) places new vectors into the fitted map, each
    at the minimum of its own NeRV cost against the fixed map (its neighbors found among the fitted
    points at the fit's perplexity, by the fit's metric). metric: as HSSNE's ("euclidean", "cosine",
    "correlation", "inner_product" or "precomputed").

    callbacks: as HSSNE's, called every callbacks_every_iters conjugate-gradient iterations with the
    NeRV cost; True stops the fit there as a finished one (stop_reason "callback").

    comm, comm_timeout: as HSSNE's. Under `mpirun -n G python script.py` each process passes its own
    rows of X (vectors); each evaluation of the cost is split over the processes and every process
    gets the whole map, the same bits as one process fitting all the rows.
    """

    _method = "nerv"
    _param_fields = tuple(_params.table("nerv"))
    _input_fields = tuple(_params.table("nerv_input", _NE_INPUT_KEYS))
    _extra = {"metric": "euclidean", "callbacks": None, "callbacks_every_iters": 10, "comm": None,
              "comm_timeout": 600.0}

    def fit(self, X, y=None):
        self._check_params()
        mode = _comm_mode(self.comm)
        if mode != "single":
            X, y = _gathered_rows(mode, X, y, None, getattr(self, "metric", "euclidean"))
        inputs = _core.Inputs()
        cbs, every = HSSNE._callbacks(self)
        report, arrays, files = self._run(inputs, _ne_inputs(self, X, y, inputs, allow_metric=self._method == "nerv"),
                                          params_json=self._params_json(inputs), output_extra=_PAGE, callbacks=cbs,
                                          every=every, comm=mode)
        self._page = files.get("map.html")
        self.embedding_ = arrays["embedding"]
        self.report_ = report
        self.n_iter_ = report["result"]["iterations"]
        HSSNE._keep_model(self, files)
        return self

    transform = HSSNE.transform


class SNeRV(NeRV):
    """Supervised NeRV (Peltonen et al.): NeRV on learning-metric distances from the labels.

    fit(X, y): X is N x d vectors, y their class labels (required). transform(X_new) places new vectors
    into the fitted map by their Euclidean neighbors among the fitted points (the learning metric
    needs the class model, which is not kept), no labels needed.
    """

    _method = "snerv"
    _input_fields = tuple(_params.table("snerv_input", ("pca", "perplexity", "affinities", "duplicates", "metric")))
    _extra = {"callbacks": None, "callbacks_every_iters": 10, "comm": None, "comm_timeout": 600.0}

    def fit(self, X, y=None):
        if y is None:
            raise ValueError("y: supervised NeRV learns its metric from the labels; pass y")
        return super().fit(X, y)


# ---------------------------------------------------------------------- PE


class PE(_Estimator):
    """Parametric Embedding (Iwata et al., 2007): objects and classes in one map from class posteriors.

    fit(P, y=None): P is N x K class posteriors p(c|x) (rows summing to 1); y, optional, labels.
    With posterior_model set, fit(X, y) fits that posterior model on labelled vectors X first.
    Fitted: embedding_ (N x D objects), class_coords_ (K x D). transform(P_new) places new objects
    against the fitted classes.

    comm (None, "auto", "mpi" or mpi4py's MPI.COMM_WORLD): under `mpirun -n G python script.py` each
    process passes its own rows (and their labels, on every process or none); the objects are
    fitted across the processes (README, "Several processes") and every process gets the whole map,
    the rows in rank order, the same bits as one process fitting all the rows. None: one process.
    comm_timeout (seconds, 600; 0: no limit): a process that waits longer for the others in one
    exchange stops the fit on every process, naming the processes that never came (a hung rank).
    """

    _method = "pe"
    _param_fields = tuple(_params.table("pe"))
    _input_fields = tuple(_params.table("pe_input", ("normalize_rows", "posterior_model")))
    _extra = {"comm": None, "comm_timeout": 600.0}

    def fit(self, X, y=None):
        inputs = _core.Inputs()
        input_json = self._input_json()
        mode = _comm_mode(self.comm)
        if mode != "single":
            # each process of the launch passed its own rows (maybe none): the map is fitted over all
            X, y = _gathered_rows(mode, X, y, None, "euclidean")
        A = _dense(X)
        if self.posterior_model is not None:
            if y is None:
                raise ValueError("y: a posterior model (posterior_model) is fitted on labelled vectors; pass y")
            input_json["vectors"] = inputs.add_matrix("X.npy", A)
            input_json["vector_labels"] = inputs.add_bytes("vector_labels.txt", _label_bytes(y, A.shape[0]))
        else:
            input_json["posteriors"] = inputs.add_matrix("P.npy", A)
            if y is not None:
                input_json["labels"] = inputs.add_bytes("labels.txt", _label_bytes(y, A.shape[0]))
        report, arrays, files = self._run(inputs, input_json, output_extra=_PAGE, comm=mode)
        self._page = files.get("map.html")
        self.embedding_ = arrays["objects"]
        self.class_coords_ = arrays["classes"]
        self.report_ = report
        self.n_features_in_ = A.shape[1]
        return self

    def transform(self, P):
        """Places objects with posteriors P (M x K) against the fitted classes (kept fixed)."""
        self._check_fitted()
        A = _dense(P, "P")
        if A.shape[1] != self.class_coords_.shape[0]:
            raise ValueError(f"P: posteriors over {A.shape[1]} classes, but the map has {self.class_coords_.shape[0]}")
        inputs = _core.Inputs()
        input_json = {k: v for k, v in self._input_json().items() if k != "posterior_model"}
        input_json["posteriors"] = inputs.add_matrix("P.npy", A)
        input_json["class_coords"] = inputs.add_matrix("classes.npy", self.class_coords_)
        params = dict(self._params_json(), fit_classes=False)
        report, arrays, files = self._run(inputs, input_json, params_json=params)
        return arrays["objects"]


# ---------------------------------------------------------------------- PLSV


def _corpus_inputs(X, inputs, vocabulary):
    """The run's corpus keys for a sparse or dense count matrix, or a sequence of texts."""
    input_json = {}
    if isinstance(X, (list, tuple)) and all(isinstance(d, str) for d in X):
        if any("\n" in d or "\r" in d for d in X):
            X = [d.replace("\r", " ").replace("\n", " ") for d in X]  # one document per line
        input_json["corpus"] = inputs.add_bytes("docs.txt", ("\n".join(X) + "\n").encode())
        input_json["format"] = "text"
        return input_json, len(X)
    if _is_sparse(X):
        coo = X.tocoo()
        coo.sum_duplicates()
    else:
        A = _dense(X)
        rows, cols = np.nonzero(A)
        coo = _Coo(A.shape, rows, cols, A[rows, cols])
    data = np.asarray(coo.data, dtype=np.float64)
    if (data < 0).any() or not np.array_equal(data, np.floor(data)) or not np.isfinite(data).all():
        raise ValueError("X: expected word counts (whole numbers >= 0)")
    input_json["corpus"] = inputs.add_sparse("corpus.mtx", coo.shape[0], coo.shape[1], np.asarray(coo.row, np.int64),
                                             np.asarray(coo.col, np.int64), data)
    input_json["format"] = "mtx"
    if vocabulary is not None:
        words = [str(w) for w in vocabulary]
        if len(words) != coo.shape[1]:
            raise ValueError(f"vocabulary: {len(words)} words for the {coo.shape[1]} columns of X")
        input_json["vocab"] = inputs.add_bytes("vocab.txt", ("\n".join(words) + "\n").encode())
    return input_json, coo.shape[0]


class _Coo:
    def __init__(self, shape, row, col, data):
        self.shape, self.row, self.col, self.data = shape, row, col, data


class PLSV(_Estimator):
    """Probabilistic latent semantic visualisation (Iwata et al., 2008): documents and topics in one map.

    fit(X, y=None, vocabulary=None): X is a documents x words count matrix (scipy.sparse or dense) or
    a list of texts (tokenised by the `text` settings); y, optional, a label per document. Fitted:
    embedding_ (the documents with words; doc_index_ maps them to rows of X: empty documents have no
    place), topic_coords_, theta_ (topics x words), vocabulary_. transform(X_new) folds new documents
    into the fitted model (topics fixed).
    """

    _method = "plsv"
    _param_fields = tuple(_params.table("plsv"))
    _input_fields = tuple(_params.table("plsv_input", ("text",)))

    def fit(self, X, y=None, vocabulary=None):
        inputs = _core.Inputs()
        input_json, n = _corpus_inputs(X, inputs, vocabulary)
        if isinstance(self.text, dict) and input_json["format"] == "text":
            input_json["text"] = self.text
        if y is not None:
            input_json["labels"] = inputs.add_bytes("labels.txt", _label_bytes(y, n))
        report, arrays, files = self._run(inputs, input_json, output_extra=_PAGE)
        self._page = files.get("map.html")
        self.embedding_ = arrays["documents"]
        self.topic_coords_ = arrays["topics"]
        self.theta_ = _npy(files["theta.npy"])
        self.doc_index_ = _npy(files["doc_index.npy"]) if "doc_index.npy" in files else np.arange(n)
        self.vocabulary_ = files["vocab.txt"].decode().splitlines() if "vocab.txt" in files else None
        self.report_ = report
        self._model = dict({k: files[k] for k in ("theta.npy", "vocab.txt") if k in files}, **{"topics.npy": self.topic_coords_})
        return self

    def fit_transform(self, X, y=None, vocabulary=None):
        return self.fit(X, y, vocabulary=vocabulary).embedding_

    def transform(self, X):
        """Folds documents into the fitted model (topics and word distributions fixed); returns their
        coordinates, one row per document with words (see the report's doc_index)."""
        self._check_fitted()
        inputs = _core.Inputs()
        input_json, _ = _corpus_inputs(X, inputs, None)
        input_json["model"] = _model_input(inputs, self._model)
        report, arrays, files = self._run(inputs, input_json)
        return arrays["documents"]
