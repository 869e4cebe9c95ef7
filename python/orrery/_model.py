"""Durable models: one documented, versioned file per estimator (est.save(path), orrery.load(path)).

The file is a zip archive (stored, not compressed) of
  header.json      {"format": "orrery-model", "format_version": 1, "orrery_version", "estimator" (the
                   class name), "method", "params" (get_params, JSON), "array_params" (names of params
                   held as arrays), "attributes" {name: "array" | "json"}, "model_files" [names]}
  params/NAME.npy  a parameter given as an array (init=Y0)
  attrs/NAME.npy   a fitted array attribute (embedding_, class_coords_, ...), .json for the others
                   (report_, kl_divergence_, vocabulary_, ...)
  model/NAME       what transform needs: the files a CLI run writes for input.model (npy, report.json)
  page/map.html    to_html's interactive page (attributes["_page"] = "page"), when the fit made one
  checksum.sha256  SHA-256 over every other entry's name and bytes, in name order (hex)
Arrays are .npy without pickles. A reader refuses a file whose checksum does not match, and a
format_version newer than it knows, with a ValueError saying which. Pickling an estimator writes this
file's bytes too, so a pickle outlives the class layout of the version that made it.
"""
import hashlib
import io
import json
import zipfile

import numpy as np

FORMAT = "orrery-model"
FORMAT_VERSION = 1


def _npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _npy(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


def _checksum(entries):
    h = hashlib.sha256()
    for name in sorted(entries):
        h.update(name.encode())
        h.update(b"\0")
        h.update(entries[name])
    return h.hexdigest()


def _json_safe(value):
    try:
        json.dumps(value, allow_nan=True)
        return True
    except (TypeError, ValueError):
        return False


def fitted_attributes(est):
    """The attributes fit set: public names ending in '_', the private _model (transform's files) and
    _page (to_html's page)."""
    return {k: v for k, v in vars(est).items()
            if (k.endswith("_") and not k.startswith("_")) or (k in ("_model", "_page") and v is not None)}


def to_bytes(est, *, skip_unsavable=False):
    """The model file's bytes. A parameter that is neither JSON nor an array (a callable, a
    RandomState) is a ValueError naming it, or with skip_unsavable left out (callbacks and comm are
    never saved: they belong to the process)."""
    from . import __version__

    entries = {}
    params, array_params, dropped = {}, [], []
    for name, value in est.get_params(deep=False).items():
        if name in ("callbacks", "comm"):
            params[name] = None
            continue
        if isinstance(value, np.ndarray):
            entries[f"params/{name}.npy"] = _npy_bytes(value)
            array_params.append(name)
        elif _json_safe(value):
            params[name] = value
        elif skip_unsavable:
            dropped.append(name)
        else:
            raise ValueError(f"save: parameter {name}={value!r} cannot be written to a model file (a JSON value or an "
                             "array is needed); set it to one first")
    attributes, model_files = {}, []
    for name, value in fitted_attributes(est).items():
        if name == "_page":
            entries["page/map.html"] = value
            attributes[name] = "page"
        elif name == "_model":
            for fname, data in value.items():
                entries[f"model/{fname}"] = data if isinstance(data, bytes) else _npy_bytes(data)
                model_files.append(fname)
        elif isinstance(value, np.ndarray):
            entries[f"attrs/{name}.npy"] = _npy_bytes(value)
            attributes[name] = "array"
        else:
            entries[f"attrs/{name}.json"] = json.dumps(value, allow_nan=True).encode()
            attributes[name] = "json"
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "orrery_version": __version__,
              "estimator": type(est).__name__, "method": getattr(est, "_method", None), "params": params,
              "array_params": array_params, "attributes": attributes, "model_files": model_files}
    entries["header.json"] = json.dumps(header, indent=1, sort_keys=True).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name in sorted(entries):
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), entries[name])
        z.writestr(zipfile.ZipInfo("checksum.sha256", date_time=(1980, 1, 1, 0, 0, 0)), _checksum(entries))
    return buf.getvalue(), dropped


def read_entries(data, where):
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            entries = {n: z.read(n) for n in z.namelist()}
    except zipfile.BadZipFile:
        raise ValueError(f"{where}: not an orrery model file (not a zip archive)") from None
    if "header.json" not in entries or "checksum.sha256" not in entries:
        raise ValueError(f"{where}: not an orrery model file (no header.json or checksum.sha256)")
    want = entries.pop("checksum.sha256").decode(errors="replace").strip()
    if _checksum(entries) != want:
        raise ValueError(f"{where}: the checksum does not match its contents; the file is damaged or was edited")
    header = json.loads(entries["header.json"])
    if header.get("format") != FORMAT:
        raise ValueError(f"{where}: not an orrery model file (format {header.get('format')!r})")
    version = header.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"{where}: written in model format {version} by orrery {header.get('orrery_version')}; "
                         f"this orrery reads formats up to {FORMAT_VERSION}: upgrade orrery to load it")
    return header, entries


def restore(est, header, entries):
    """Sets est's parameters and fitted attributes from a read model file."""
    params = dict(header["params"])
    for name in header.get("array_params", []):
        params[name] = _npy(entries[f"params/{name}.npy"])
    known = est.get_params(deep=False)
    est.set_params(**{k: v for k, v in params.items() if k in known})
    for name, kind in header["attributes"].items():
        if kind == "page":
            est._page = entries["page/map.html"]
        elif kind == "array":
            setattr(est, name, _npy(entries[f"attrs/{name}.npy"]))
        else:
            setattr(est, name, json.loads(entries[f"attrs/{name}.json"]))
    if header["model_files"]:
        est._model = {f: entries[f"model/{f}"] for f in header["model_files"]}
    return est


def from_bytes(data, where="model"):
    from . import _estimators

    header, entries = read_entries(data, where)
    cls = getattr(_estimators, header["estimator"], None)
    if cls is None or not isinstance(cls, type):
        raise ValueError(f"{where}: holds a {header['estimator']!r}, which this orrery does not have")
    return restore(cls(), header, entries)


def load(path):
    """Reads a model file written by est.save(path) (any orrery version with a format this one reads)."""
    with open(path, "rb") as f:
        return from_bytes(f.read(), str(path))
