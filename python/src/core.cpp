// orrery._core: the run layer and the quality measures, in process, for the Python package
// (python/orrery). A fit is a run: the package builds the run's config from the estimator's keyword
// arguments (a dict, as a config file holds it), hands the arrays over as in-memory inputs
// (io/memory_inputs.hpp) in place of files, and takes the coordinates back as arrays and the other
// outputs as bytes (RunConfig::result). So a fit from Python goes through the same config checks,
// readers, memory plan, methods and report as `orrery run`, and gives its bits.
//
// The GIL is released while a run works; at each of the method's safe points (where a run could
// stop with a checkpoint) the run takes the GIL for a moment and asks Python for pending signals,
// so Ctrl-C stops a fit with KeyboardInterrupt. Errors: orrery::Error of kind input -> ValueError,
// others -> RuntimeError; the message is the engine's.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "run/quality_json.hpp"
#include "run/methods.hpp"
#include "run/ne_config.hpp"
#include "run/run_common.hpp"
#include "report/svg_map.hpp"
#include "run/run_config.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "orrery/backend.hpp"
#include "orrery/build_info.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"
#include "orrery/quality.hpp"
#include "orrery/run_control.hpp"

namespace py = pybind11;
using namespace orrery;

namespace {

using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IndexArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

MatrixD to_matrix(const DoubleArray& a, const std::string& what) {
  if (a.ndim() != 2) throw py::value_error(what + ": expected a 2-D array, found " + std::to_string(a.ndim()) + "-D");
  MatrixD m;
  m.rows = a.shape(0);
  m.cols = a.shape(1);
  m.data.assign(a.data(), a.data() + a.size());
  return m;
}

// One run's in-memory inputs; the run's config names them by the returned paths. A matrix is
// borrowed: a C-contiguous float64 array as it is (pybind11 converts anything else once), kept alive
// here, and read in place where the run only reads it (the projection of input.pca), copied where
// the run keeps a matrix of its own.
class Inputs {
 public:
  std::string prefix() const { return scope_.prefix(); }
  std::string add_matrix(const std::string& name, const DoubleArray& a) {
    if (a.ndim() != 2) throw py::value_error(name + ": expected a 2-D array, found " + std::to_string(a.ndim()) + "-D");
    arrays_.push_back(a);
    return scope_.add_view(name, MatrixViewD(a.data(), a.shape(0), a.shape(1)));
  }
  std::string add_sparse(const std::string& name, index_t rows, index_t cols, const IndexArray& row,
                         const IndexArray& col, const DoubleArray& val) {
    if (row.size() != col.size() || row.size() != val.size())
      throw py::value_error(name + ": row, col and val must have one entry per nonzero");
    io::SparseTriples t;
    t.rows = rows, t.cols = cols;
    t.row.assign(row.data(), row.data() + row.size());
    t.col.assign(col.data(), col.data() + col.size());
    t.val.assign(val.data(), val.data() + val.size());
    for (size_t k = 0; k < t.row.size(); ++k)
      if (t.row[k] < 0 || t.row[k] >= rows || t.col[k] < 0 || t.col[k] >= cols)
        throw py::value_error(name + ": entry " + std::to_string(k) + " lies outside the " + std::to_string(rows) +
                              " x " + std::to_string(cols) + " matrix");
    return scope_.add_sparse(name, std::move(t));
  }
  std::string add_bytes(const std::string& name, const py::bytes& b) { return scope_.add_bytes(name, std::string(b)); }

 private:
  std::vector<DoubleArray> arrays_;  // before scope_: released after the scope forgets them
  io::MemoryInputs scope_;
};

// Stops a run at its next safe point once Python has a pending signal (Ctrl-C). No checkpoint is
// saved: a Python caller keeps nothing of an interrupted fit. With callbacks (a list of callables,
// and `every` > 0), every `every` iterations each is called as f(iteration, objective, Y): the
// objective last recorded in the method's trace and a read-only copy of the map (N x dim, from the
// state the method hands over, "<method>.y"); one that returns True ends the fit there, as a
// finished fit (RunControl::stop_requested). Without callbacks nothing is copied.
class SignalControl : public RunControl {
 public:
  SignalControl() = default;
  SignalControl(py::object callbacks, int every, std::string method, int dim)
      : callbacks_(std::move(callbacks)), every_(every), method_(std::move(method)), dim_(dim) {}
  const RunState* resume() const override { return nullptr; }
  bool wants_map() const override { return every_ > 0 && !callbacks_.is_none(); }
  void safe_point(int iteration, const std::function<RunState()>& capture) override {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      pending_ = true;  // the Python error (KeyboardInterrupt) stays set for the caller
      throw Interrupted("interrupted");
    }
    if (every_ <= 0 || callbacks_.is_none() || iteration % every_ != 0) return;
    const RunState s = capture();
    // hssne's map, or nerv's (snerv's map is a nerv fit; its metric's own fit shows no map)
    const std::string key = method_ == "snerv" ? "nerv" : method_;
    if (!s.values().count(key + ".y") || !s.values().count(key + ".trace")) return;
    const auto& trace = s.get(key + ".trace");
    const auto& y = s.get(key + ".y");
    const auto rows = static_cast<py::ssize_t>(y.size()) / dim_;
    py::array_t<double> Y({rows, static_cast<py::ssize_t>(dim_)});
    std::copy(y.begin(), y.end(), Y.mutable_data());
    Y.attr("setflags")(py::arg("write") = false);
    const double objective = trace.empty() ? 0.0 : trace.back();
    for (const auto& f : callbacks_)
      if (py::bool_(f(iteration, objective, Y))) stop_ = true;
  }
  bool stop_requested() const override { return stop_; }
  bool pending() const { return pending_; }

 private:
  py::object callbacks_ = py::none();
  int every_ = 0;
  std::string method_;
  int dim_ = 2;
  bool pending_ = false;
  bool stop_ = false;
};

// Runs f without the GIL; rethrows what it threw as the Python exception it maps to.
template <class F>
void without_gil(F&& f, const SignalControl* control = nullptr) {
  std::exception_ptr error;
  {
    py::gil_scoped_release nogil;
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const Interrupted&) {
    if (control && control->pending() && PyErr_Occurred()) throw py::error_already_set();
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::input) throw py::value_error(e.what());
    throw std::runtime_error(e.what());
  }
}

// An estimator's run config, built from its keyword arguments as Python values (dict, list, str,
// bool, int, float, None), as JSON for the run layer's one reader of configs: the same keys, checks
// and messages as a config file. `where` names the key in errors.
json to_json(const py::handle& v, const std::string& where, int depth = 0) {
  if (depth > pipeline::kMaxJsonDepth) throw py::value_error(where + ": nested deeper than the config allows");
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v) || (!py::isinstance<py::float_>(v) && py::hasattr(v, "__index__"))) {
    const py::int_ i(py::reinterpret_borrow<py::object>(v));  // numpy's integers too
    if (py::int_(0) <= i) return i.cast<unsigned long long>();
    return i.cast<long long>();
  }
  if (py::isinstance<py::float_>(v)) {
    const double d = v.cast<double>();
    if (!std::isfinite(d)) throw py::value_error(where + ": expected a finite number, found " + std::string(py::repr(v)));
    return d;
  }
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::dict>(v)) {
    json out = json::object();
    for (const auto& [k, x] : py::reinterpret_borrow<py::dict>(v)) {
      const std::string key = py::str(k);
      out[key] = to_json(x, where.empty() ? key : where + "." + key, depth + 1);
    }
    return out;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    json out = json::array();
    size_t k = 0;
    for (const auto& x : v) out.push_back(to_json(x, where + "[" + std::to_string(k++) + "]", depth + 1));
    return out;
  }
  throw py::value_error(where + ": a config holds numbers, strings, booleans, lists and dicts, found " +
                        std::string(py::repr(py::type::of(v))));
}

py::array_t<double> to_array(const MatrixD& m) {
  py::array_t<double> out({m.rows, m.cols});
  std::copy(m.data.begin(), m.data.end(), out.mutable_data());
  return out;
}

// The communicator a config's or estimator's comm names; a bad name is a ValueError naming comm.
std::unique_ptr<Comm> comm_for(const std::string& mode, double timeout = kDefaultCommTimeout) {
  try {
    return make_comm(mode, timeout);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

// Runs the config (a dict, as a run config file holds it) whose input paths name `inputs`.
// `write`, when given, takes each progress line instead of sys.stderr (a progress bar's write).
py::tuple run(const py::dict& config, const Inputs&, bool quiet, const py::object& callbacks, int every,
              const py::object& write) {
  pipeline::RunConfig rc;
  try {
    rc = pipeline::run_config_from_json(to_json(config, ""), "<python>");
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  const pipeline::MethodEntry* method = pipeline::find_method(rc.method);
  // the run's communicator: one process unless the config's comm says otherwise (orrery.PE(comm=...))
  const std::unique_ptr<Comm> comm = comm_for(rc.comm_mode, rc.comm_timeout);
  rc.comm = comm.get();
  try {
    pipeline::check_run_ranks(rc, *method);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  pipeline::RunResult result;
  rc.result = &result;
  int dim = 2;
  if (rc.params.is_object() && rc.params.contains("dim") && rc.params["dim"].is_number_integer())
    dim = rc.params["dim"].get<int>();
  SignalControl control(callbacks, every, rc.method, dim);
  // progress lines go to Python's sys.stderr, which a notebook shows in the cell (the process's own
  // stderr reaches only the server's log)
  const pipeline::ScopedProgressSink sink([&write](const std::string& line) {
    py::gil_scoped_acquire gil;
    try {
      if (!write.is_none()) {
        write(line);
        return;
      }
      const py::object err = py::module_::import("sys").attr("stderr");
      err.attr("write")(line);
      err.attr("flush")();
    } catch (const py::error_already_set&) {  // a closed or replaced stream: the line is dropped
    }
  });
  json report;
  // (several ranks: no callbacks or interruption; a rank that stops alone would leave the others
  // waiting in a collective)
  RunControl* run_control = comm->size() > 1 ? nullptr : &control;
  without_gil([&] { report = method->run(rc, quiet, run_control); }, &control);
  py::dict arrays, files;
  for (const auto& [name, m] : result.arrays) arrays[py::str(name)] = to_array(m);
  for (const auto& [name, bytes] : result.files) files[py::str(name)] = py::bytes(bytes);
  return py::make_tuple(report.dump(), arrays, files);
}

// Every rank's rows of a float64 matrix (or bytes), concatenated in rank order, on every rank: what
// an estimator given `comm` fits when each process of an MPI launch passes its own rows.
py::array_t<double> gather_rows(const std::string& mode, const py::array_t<double, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 2) throw py::value_error("gather_rows: expected a 2-D array");
  const std::unique_ptr<Comm> comm = comm_for(mode);
  std::vector<std::int64_t> cols = {static_cast<std::int64_t>(a.shape(1))}, low = cols;
  comm->allreduce(cols.data(), 1, ReduceOp::max);
  comm->allreduce(low.data(), 1, ReduceOp::min);
  if (cols[0] != low[0])
    throw py::value_error("comm: the ranks pass rows of different widths (" + std::to_string(low[0]) + " and " +
                          std::to_string(cols[0]) + " columns)");
  std::vector<std::size_t> counts;
  const std::vector<double> all = comm->allgatherv(a.data(), static_cast<std::size_t>(a.size()), &counts);
  py::array_t<double> out({static_cast<py::ssize_t>(all.size() / std::max<std::size_t>(1, a.shape(1))),
                           static_cast<py::ssize_t>(a.shape(1))});
  std::copy(all.begin(), all.end(), out.mutable_data());
  return out;
}

py::bytes gather_bytes(const std::string& mode, const py::bytes& b) {
  const std::unique_ptr<Comm> comm = comm_for(mode);
  const std::string mine = b;
  const std::vector<char> all = comm->allgatherv(mine.data(), mine.size());
  return py::bytes(all.data(), all.size());
}

// Every parameter table: name -> [(key, type, default as text, range, doc)].
py::dict tables() {
  py::dict out;
  for (const auto& m : pipeline::methods())
    for (const auto& t : m.tables) {
      py::list rows;
      for (const FieldInfo& f : t.describe())
        rows.append(py::make_tuple(f.key, f.type, f.default_text, f.range_text, f.doc));
      out[py::str(t.name)] = rows;
    }
  return out;
}

std::string evaluate(const DoubleArray& X, const DoubleArray& Y, const std::vector<int>& labels,
                     const std::vector<int>& ks, bool input_is_distance_matrix, double perplexity, index_t queries,
                     unsigned long long seed, int threads, const std::string& device, const std::string& metric) {
  MatrixD x = to_matrix(X, "X");
  const MatrixD y = to_matrix(Y, "Y");
  const VectorMetric m = parse_enum<VectorMetric>(metric, "metric");
  if (pipeline::scales_rows(m)) pipeline::unit_rows(x, m, "X");
  QualityRequest req;
  req.inner_product = m == VectorMetric::inner_product;
  req.ks = ks;
  req.curve = false;
  req.input_is_distance_matrix = input_is_distance_matrix;
  req.perplexity = perplexity;
  req.queries = queries;
  req.seed = seed;
  req.threads = threads;
  std::string text;
  without_gil([&] {
    const std::unique_ptr<Backend> backend = make_backend(device, threads);
    text = pipeline::quality_json(evaluate_quality(x, y, labels, req, *backend)).dump();
  });
  return text;
}

// A matrix file as the runs read it (npy, IDX, csv/tsv/txt, each optionally gzipped).
py::array_t<double> read_matrix(const std::string& path, index_t limit) {
  MatrixD m;
  without_gil([&] { m = io::read_matrix(path, limit); });
  return to_array(m);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "orrery's engine: runs and quality measures in process";
  m.attr("__version__") = ORRERY_VERSION;
  m.attr("git_revision") = ORRERY_GIT_REVISION;
#ifdef ORRERY_HAVE_CUDA
  m.attr("cuda") = true;
#else
  m.attr("cuda") = false;
#endif
  py::class_<Inputs>(m, "Inputs")
      .def(py::init<>())
      .def_property_readonly("prefix", &Inputs::prefix)
      .def("add_matrix", &Inputs::add_matrix, py::arg("name"), py::arg("array"))
      .def("add_sparse", &Inputs::add_sparse, py::arg("name"), py::arg("rows"), py::arg("cols"), py::arg("row"),
           py::arg("col"), py::arg("val"))
      .def("add_bytes", &Inputs::add_bytes, py::arg("name"), py::arg("data"));
  m.def("gather_rows", &gather_rows, py::arg("comm"), py::arg("array"),
        "Every rank's rows (float64), concatenated in rank order, on every rank of the communicator `comm` names.");
  m.def("gather_bytes", &gather_bytes, py::arg("comm"), py::arg("data"),
        "Every rank's bytes, concatenated in rank order, on every rank.");
  m.def("run", &run, py::arg("config"), py::arg("inputs"), py::arg("quiet") = true,
        py::arg("callbacks") = py::none(), py::arg("every") = 0, py::arg("write") = py::none(),
        "Runs a config (a dict, as a run config file holds it) whose input paths name `inputs`; returns "
        "(report JSON, {coordinate output name: array}, {other output file name: bytes}).");
  m.def(
      "palette",
      [] {
        py::list out;
        for (int i = 0; i < 24; ++i) out.append(report::palette_colour(i));
        return py::make_tuple(out, report::palette_colour(-1));
      },
      "The maps' class colours (24, cycled) and the grey of unlabelled points, as the SVG and HTML maps use.");
  m.def("read_matrix", &read_matrix, py::arg("path"), py::arg("limit") = 0,
        "A matrix file (npy, IDX, csv/tsv/txt, optionally gzipped) as the runs read it: float64, rows x columns.");
  m.def("tables", &tables, "Every parameter table: {name: [(key, type, default, range, doc)]}.");
  m.def("evaluate", &evaluate, py::arg("X"), py::arg("Y"), py::arg("labels"), py::arg("ks"),
        py::arg("input_is_distance_matrix"), py::arg("perplexity"), py::arg("queries"), py::arg("seed"),
        py::arg("threads"), py::arg("device"), py::arg("metric") = "euclidean");
}
