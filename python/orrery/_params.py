"""Keyword parameters of the estimators, generated from the engine's field tables.

Each default, range and meaning is written once, next to its C++ Params struct; `orrery defaults
TABLE` prints the same table. Here a table's rows become an estimator's keyword parameters with the
same names and defaults (renamed: `dim` is `n_components`, scikit-learn's name, and NeRV's `lambda`,
a Python keyword, is `lam`), and its docs
become the class's parameter documentation.
"""
import json
import math
import numbers

from . import _core

_TABLES = _core.tables()

# Field keys the estimators take under another name: scikit-learn's for the map's dimension, and
# NeRV's lambda, a Python keyword (not lambda_: a trailing underscore marks a fitted attribute).
RENAMED = {"dim": "n_components", "lambda": "lam"}


class Field:
    """One row of a field table: key, JSON type, default, range text and meaning."""

    __slots__ = ("key", "type", "default", "range", "doc", "table")

    def __init__(self, table, key, type_, default_text, range_text, doc):
        self.table = table
        self.key = key
        self.type = type_
        self.default = _parse_default(type_, default_text)
        self.range = range_text
        self.doc = doc

    @property
    def name(self):
        """The keyword the estimator takes."""
        return RENAMED.get(self.key, self.key)


def _parse_default(type_, text):
    if text == "none" or type_ == "object":
        return None  # absent; an object (a sub-table) defaults to its own table's defaults
    if text in ("inf", "-inf"):
        return math.inf if text == "inf" else -math.inf
    value = json.loads(text)
    if type_ == "number":
        return float(value)
    return value


def table(name, keys=None):
    """The rows of table `name` (all, or those in `keys`, in the table's order)."""
    rows = [Field(name, *row) for row in _TABLES[name]]
    if keys is not None:
        missing = set(keys) - {f.key for f in rows}
        if missing:
            raise KeyError(f"table {name} has no field(s) {sorted(missing)}")
        rows = [f for f in rows if f.key in keys]
    return rows


def check_value(field, value):
    """Checks a keyword's type (ValueError naming it); the engine checks ranges when a fit starts."""
    name = field.name
    if value is None:
        return
    t = field.type
    ok = {
        "bool": lambda v: isinstance(v, (bool, numbers.Integral)) and v in (0, 1),
        "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "object": lambda v: isinstance(v, dict),
    }.get(t, lambda v: True)
    if not ok(value):
        expected = {"bool": "True or False", "int": "an integer", "number": "a number", "string": "a string",
                    "object": "a dict of the keys `orrery defaults` lists"}[t]
        raise ValueError(f"{name}: expected {expected}, found {value!r}")
    if t == "number" and not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, found {value!r}")
    if t == "string" and " | " in field.range and value not in field.range.split(" | "):
        raise ValueError(f"{name}: expected one of {field.range}, found {value!r}")


def to_json(field, value):
    """A keyword's value as the run config takes it."""
    if field.type == "int":
        return int(value)
    if field.type == "number":
        return float(value)
    if field.type == "bool":
        return bool(value)
    return value


def doc_block(fields):
    """numpydoc 'Parameters' entries for the fields."""
    lines = []
    for f in fields:
        default = "None" if f.default is None else repr(f.default)
        kind = {"number": "float", "string": "str", "object": "dict"}.get(f.type, f.type)
        rng = f", {f.range}" if f.range else ""
        lines.append(f"{f.name} : {kind}, default={default}{rng}")
        lines.append(f"    {f.doc}")
    return "\n".join(lines)
