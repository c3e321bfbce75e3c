// tunekit._tunekit: the Python bindings of tunekit (pybind11). The pure-Python package
// python/tunekit/ re-exports them and adds the Kernel Tuner strategy and the Optuna sampler;
// docs/python.md describes the Python API.
//
// Configs cross the boundary as dicts {knob name: value}: an integer for ordinal, range,
// power-of-two and boolean knobs, the label (str) for a categorical or ranked knob (Knob::ranked:
// a replayed Kernel Tuner parameter of floats), the tuple of factors for a split knob. A tuner is
// one of the registry's presets (preset_registry.hpp) behind a virtual interface, so every preset
// is reachable by its name. The GIL is released while a tuner searches
// (ask, tune, replay); a Python constraint takes it back for each call.

#include <pybind11/eval.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/preset_registry.hpp>
#include <tunekit/records/log.hpp>
#include <tunekit/replay/kernel_tuner_cache.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

using tunekit::Config;
using tunekit::Knob;
using tunekit::KnobKind;
using tunekit::Measurement;
using tunekit::Rng;

// The first exception a Python constraint raised while C++ code evaluated it (perhaps on another
// thread, with the GIL released by ask); the binding that called into C++ raises it afterwards.
struct PythonErrorSlot {
  std::mutex mutex;
  std::optional<py::error_already_set> error;

  void store(py::error_already_set&& e) {
    std::lock_guard lock(mutex);
    if (!error) error.emplace(std::move(e));
  }
  bool failed() {
    std::lock_guard lock(mutex);
    return error.has_value();
  }
  // Raises the stored exception, if any (with the GIL held).
  void rethrow() {
    std::optional<py::error_already_set> e;
    {
      std::lock_guard lock(mutex);
      e.swap(error);
    }
    if (e) throw std::move(*e);
  }
};

// A Python callable held by C++ objects that may be copied and destroyed without the GIL.
struct PythonCallable {
  py::object fn;
  explicit PythonCallable(py::object f) : fn(std::move(f)) {}
  PythonCallable(const PythonCallable&) = delete;
  PythonCallable& operator=(const PythonCallable&) = delete;
  ~PythonCallable() {
    if (!Py_IsInitialized()) {
      fn.release();
      return;
    }
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
};

// The dict type of the values a Python constraint sees (ConfigValues, defined at the module's
// start; a reference kept for the interpreter's life).
PyObject* config_values_type = nullptr;

// A knob's value as Python sees it.
py::object knob_value(const Knob& k, std::size_t i) {
  if (k.labelled()) return py::str(k.label(i));  // categorical and ranked knobs
  if (k.kind() == KnobKind::split) return py::tuple(py::cast(k.factors(i)));
  if (k.kind() == KnobKind::boolean) return py::bool_(k.value(i) != 0);
  return py::int_(k.value(i));
}

// The index of a Python value among a knob's values; ValueError naming the knob otherwise.
std::uint32_t knob_index_of(const Knob& k, const py::handle& v) {
  try {
    std::size_t i = 0;
    if (k.labelled()) {  // categorical and ranked knobs
      i = k.index_of_label(v.cast<std::string>());
    } else if (k.kind() == KnobKind::split) {
      i = k.index_of_factors(v.cast<std::vector<std::int64_t>>());
    } else {
      if (py::isinstance<py::float_>(v)) throw py::cast_error();
      i = k.index_of(v.cast<std::int64_t>());
    }
    if (i >= k.size()) throw py::cast_error();  // the index_of* give size() for a value not there
    return static_cast<std::uint32_t>(i);
  } catch (const py::cast_error&) {
    throw py::value_error("knob '" + k.name() + "' has no value " + py::repr(v).cast<std::string>());
  } catch (const std::exception&) {
    throw py::value_error("knob '" + k.name() + "' has no value " + py::repr(v).cast<std::string>());
  }
}

// A search space built from Python, with the error slot of its Python constraints.
struct PySpace {
  tunekit::SearchSpace space;
  std::shared_ptr<PythonErrorSlot> errors = std::make_shared<PythonErrorSlot>();

  py::dict values(const Config& c) const {
    if (c.size() != space.dimensions())
      throw py::value_error("config has " + std::to_string(c.size()) + " values, the space has " +
                            std::to_string(space.dimensions()) + " knobs");
    py::dict d;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Knob& k = space.knob(i);
      if (c[i] >= k.size())
        throw py::value_error("config index " + std::to_string(c[i]) + " out of range for knob '" + k.name() + "'");
      d[py::str(k.name())] = knob_value(k, c[i]);
    }
    return d;
  }

  // A config from a dict of values (every knob; constants may be given with their value) or a
  // list of value indices.
  Config config(const py::handle& h) const {
    Config c(space.dimensions());
    if (py::isinstance<py::dict>(h)) {
      const auto d = h.cast<py::dict>();
      std::size_t found = 0;
      for (auto [key, value] : d) {
        const auto name = key.cast<std::string>();
        bool matched = false;
        for (std::size_t i = 0; i < space.dimensions(); ++i)
          if (space.knob(i).name() == name) {
            c[i] = knob_index_of(space.knob(i), value);
            ++found;
            matched = true;
          }
        if (matched) continue;
        bool constant = false;
        for (const auto& k : space.constants())
          if (k.name == name) {
            constant = true;
            if (py::isinstance<py::float_>(value) || value.cast<std::int64_t>() != k.value)
              throw py::value_error("constant '" + name + "' is " + std::to_string(k.value) + ", not " +
                                    py::repr(value).cast<std::string>());
          }
        if (!constant) throw py::value_error("the space has no knob or constant named '" + name + "'");
      }
      if (found != space.dimensions())
        for (std::size_t i = 0; i < space.dimensions(); ++i)
          if (!d.contains(py::str(space.knob(i).name())))
            throw py::value_error("config lacks knob '" + space.knob(i).name() + "'");
      return c;
    }
    const auto indices = h.cast<std::vector<std::int64_t>>();
    if (indices.size() != space.dimensions())
      throw py::value_error("config has " + std::to_string(indices.size()) + " value indices, the space has " +
                            std::to_string(space.dimensions()) + " knobs");
    for (std::size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] < 0 || static_cast<std::uint64_t>(indices[i]) >= space.knob(i).size())
        throw py::value_error("value index " + std::to_string(indices[i]) + " out of range for knob '" +
                              space.knob(i).name() + "' (" + std::to_string(space.knob(i).size()) + " values)");
      c[i] = static_cast<std::uint32_t>(indices[i]);
    }
    return c;
  }

  void add_python_constraint(std::string description, py::function fn) {
    std::string what = "constraint '" + description + "'";
    space.add_constraint(std::move(description), python_predicate(std::move(fn), std::move(what)));
  }

  // A predicate over a ConfigView that calls fn with a dict of the knobs and constants added
  // so far (a ConfigValues: looking up another name is a ValueError naming `what`, the name and
  // the names it has); what fn raises is kept in `errors` and the predicate answers false. Such
  // a predicate is not a pure function of the config, so the space keeps no validity bits.
  tunekit::Constraint::Predicate python_predicate(py::function fn, std::string what) {
    space.keep_validity_bits(false);
    // What the predicate sees: the knobs and constants added before it.
    struct Names {
      std::vector<std::pair<std::string, KnobKind>> knobs;
      std::vector<std::string> constants;
    };
    auto names = std::make_shared<Names>();
    for (const auto& k : space.knobs()) names->knobs.emplace_back(k.name(), k.kind());
    for (const auto& k : space.constants()) names->constants.push_back(k.name);
    auto callable = std::make_shared<PythonCallable>(std::move(fn));
    auto slot = errors;
    return [callable, slot, names, what = std::move(what)](const tunekit::ConfigView& v) -> bool {
      py::gil_scoped_acquire gil;
      if (slot->failed()) return false;
      try {
        py::object d = py::reinterpret_borrow<py::object>(config_values_type)();
        d.attr("what") = what;
        for (const auto& [name, kind] : names->knobs) {
          if (kind == KnobKind::categorical)
            d[py::str(name)] = py::str(v.label(name));
          else if (kind == KnobKind::split)
            d[py::str(name)] = py::tuple(py::cast(v.factors(name)));
          else if (kind == KnobKind::boolean)
            d[py::str(name)] = py::bool_(v[name] != 0);
          else
            d[py::str(name)] = py::int_(v[name]);
        }
        for (const auto& name : names->constants) d[py::str(name)] = py::int_(v[name]);
        return PyObject_IsTrue(callable->fn(d).ptr()) == 1;
      } catch (py::error_already_set& e) {
        slot->store(std::move(e));
        return false;
      }
    };
  }
};

// Calls f() and raises what a Python constraint raised meanwhile (in place of what C++ threw
// because of it, e.g. "no configuration satisfies ..."). With `release`, f runs without the GIL.
template <class F>
auto checked(const std::shared_ptr<PythonErrorSlot>& slot, F&& f, bool release = false) {
  using R = decltype(f());
  std::exception_ptr thrown;
  std::optional<std::conditional_t<std::is_reference_v<R>, std::reference_wrapper<std::remove_reference_t<R>>, R>> r;
  {
    std::optional<py::gil_scoped_release> unlocked;
    if (release) unlocked.emplace();
    try {
      r.emplace(f());
    } catch (...) {
      thrown = std::current_exception();
    }
  }
  slot->rethrow();
  if (thrown) std::rethrow_exception(thrown);
  return static_cast<R>(*r);
}

// A trial as Python sees it.
struct PyTrial {
  py::dict config;
  Config indices;
  std::uint64_t index = 0;
  Measurement measurement;
  double tuning_seconds = 0.0;
};

PyTrial to_py(const PySpace& s, const tunekit::Trial& t) {
  return {s.values(t.config), t.config, t.index, t.measurement, t.tuning_seconds};
}

// One replayed run: its trials and the score after each (replay_score.hpp).
struct PyReplayTrace {
  std::vector<PyTrial> trials;
  std::vector<double> score, found;
};

// A kernel written in Python: run(config, runs) returns the seconds of each run, or a Status, or
// (Status, message) for a failure. An exception it raises is a runtime_error with the exception's
// text (a failed config never stops the tuning), except KeyboardInterrupt and SystemExit, which
// stop it (LogUnlessInterrupted) and are raised again by Tuner.tune.
struct PyKernel {
  const PySpace* tuner_space = nullptr;
  double flop_per_run = 0.0;
  std::shared_ptr<PythonCallable> fn;

  const tunekit::SearchSpace& space() const { return tuner_space->space; }
  double flop() const { return flop_per_run; }

  tunekit::RunResult run(const Config& c, std::size_t runs, Rng&) {
    py::gil_scoped_acquire gil;
    const auto& slot = tuner_space->errors;
    if (slot->failed()) return {tunekit::Status::runtime_error, {}, "interrupted", -1.0};
    try {
      const py::object r = fn->fn(tuner_space->values(c), runs);
      if (py::isinstance<tunekit::Status>(r)) return {r.cast<tunekit::Status>(), {}, {}, -1.0};
      if (py::isinstance<py::tuple>(r) && py::len(r) == 2 && py::isinstance<tunekit::Status>(r[py::int_(0)]))
        return {r[py::int_(0)].cast<tunekit::Status>(), {}, py::str(r[py::int_(1)]).cast<std::string>(), -1.0};
      return {tunekit::Status::ok, r.cast<std::vector<double>>(), {}, -1.0};
    } catch (py::error_already_set& e) {
      // The exception's type and message (what() would add the traceback).
      const std::string what = py::str(e.type().attr("__name__")).cast<std::string>() + ": " +
                               py::str(e.value()).cast<std::string>();
      if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) slot->store(std::move(e));
      return {tunekit::Status::runtime_error, {}, "Python: " + what, -1.0};
    } catch (const py::cast_error&) {
      return {tunekit::Status::runtime_error, {},
              "the kernel's run(config, runs) returned neither a list of seconds per run nor a Status or "
              "(Status, message)",
              -1.0};
    }
  }
};
static_assert(tunekit::Kernel<PyKernel>);

// Thrown out of Tuner::tune when a Python kernel was interrupted; Tuner.tune raises the Python
// exception (KeyboardInterrupt, SystemExit) in its place.
struct PythonInterrupted : std::exception {
  const char* what() const noexcept override { return "interrupted in Python"; }
};

// The log of Tuner.tune with a Python kernel (if any), and its stop: once the kernel was
// interrupted, the trial that was told is not logged and tune ends by PythonInterrupted.
struct LogUnlessInterrupted {
  std::shared_ptr<PythonErrorSlot> slot;
  std::optional<tunekit::LogToFile> log;
  void on_measured(const tunekit::TuningState& s, const tunekit::Trial& t) {
    if (slot->failed()) throw PythonInterrupted();
    if (log) log->on_measured(s, t);
  }
};

// What every preset's tuner offers Python.
struct AnyTuner {
  virtual ~AnyTuner() = default;
  virtual std::vector<Config> ask(std::size_t n, Rng& rng) = 0;
  virtual const tunekit::Trial& tell(const Config& c, Measurement m) = 0;
  virtual const tunekit::History& history() const = 0;
  virtual std::size_t pending() const = 0;
  virtual bool budget_spent() const = 0;
  virtual void forget_pending() = 0;
  virtual double tuning_seconds() const = 0;
  virtual double search_seconds() const = 0;
  virtual double measurement_seconds() const = 0;
  virtual std::size_t resume(const std::filesystem::path& path, const std::string& task, bool exact) = 0;
  virtual Measurement evaluate(tunekit::ReplayKernel& k, const Config& c, Rng& rng) = 0;
  virtual tunekit::TuneResult tune(tunekit::ReplayKernel& k, Rng& rng, const std::string& log) = 0;
  virtual tunekit::TuneResult tune(PyKernel& k, Rng& rng, const std::string& log) = 0;
  virtual tunekit::ReplayTrace replay(tunekit::ReplayKernel& k, Rng& rng) = 0;
};

template <class TunerT>
struct TunerImpl final : AnyTuner {
  TunerT tuner;
  TunerImpl(tunekit::SearchSpace space, tunekit::TunerOptions options) : tuner(std::move(space), std::move(options)) {}
  std::vector<Config> ask(std::size_t n, Rng& rng) override { return tuner.ask(n, rng); }
  const tunekit::Trial& tell(const Config& c, Measurement m) override { return tuner.tell(c, std::move(m)); }
  const tunekit::History& history() const override { return tuner.history(); }
  std::size_t pending() const override { return tuner.pending(); }
  bool budget_spent() const override { return tuner.budget_spent(); }
  void forget_pending() override { tuner.forget_pending(); }
  double tuning_seconds() const override { return tuner.tuning_seconds(); }
  double search_seconds() const override { return tuner.search_seconds(); }
  double measurement_seconds() const override { return tuner.measurement_seconds(); }
  std::size_t resume(const std::filesystem::path& path, const std::string& task, bool exact) override {
    return exact ? tunekit::resume_exact(tuner, path, task) : tunekit::resume(tuner, path, task);
  }
  Measurement evaluate(tunekit::ReplayKernel& k, const Config& c, Rng& rng) override {
    return tuner.evaluator().measure(k, c, rng);
  }
  tunekit::TuneResult tune(tunekit::ReplayKernel& k, Rng& rng, const std::string& log) override {
    return tuner.tune(k, rng, log.empty() ? tunekit::LogToFile::none() : tunekit::LogToFile(log));
  }
  tunekit::TuneResult tune(PyKernel& k, Rng& rng, const std::string& log) override {
    LogUnlessInterrupted callback{k.tuner_space->errors, std::nullopt};
    if (!log.empty()) callback.log.emplace(log);
    return tuner.tune(k, rng, callback);
  }
  tunekit::ReplayTrace replay(tunekit::ReplayKernel& k, Rng& rng) override {
    return tunekit::replay_trace(tuner, k, rng);
  }
};

std::unique_ptr<AnyTuner> make_tuner(const std::string& preset, tunekit::SearchSpace space,
                                     tunekit::TunerOptions options) {
  return tunekit::with_preset(preset, [&]<class T>() -> std::unique_ptr<AnyTuner> {
    return std::make_unique<TunerImpl<T>>(std::move(space), std::move(options));
  });
}

// A tuner of a preset over a Python space, its own generator, and an optional log of what it is
// told. Its mutex serialises calls from several Python threads (ask runs without the GIL).
//
// A log holds one run of a task: the tuner writes to a log (its own, or tune's) only once it has
// the log's records of its task, taken with resume (or Tuner(log=..., resume=True)) or written by
// itself; a log that holds records of the task that it has not is refused (ValueError saying
// what to do), so that a second run never appends a second copy of the first one.
struct PyTuner {
  PySpace space;
  std::string preset;
  std::unique_ptr<AnyTuner> tuner;
  Rng rng;
  tunekit::TunerOptions options;
  std::unique_ptr<tunekit::RecordWriter> log;
  std::filesystem::path log_path;
  // The logs (by canonical path) whose records of the task the tuner has or wrote.
  std::set<std::filesystem::path> taken_logs;
  mutable std::mutex mutex;

  PyTrial tell(const py::handle& config, Measurement m);

  static std::filesystem::path key(const std::filesystem::path& p) {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(p));
  }
  // The records of the tuner's task (of every task when it has no name) in a log; 0 for a
  // missing or empty one.
  std::size_t task_records(const std::filesystem::path& p) const {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec) || std::filesystem::file_size(p, ec) == 0) return 0;
    return tunekit::read_records(p, space.space, options.task, nullptr).size();
  }
  std::string task_text() const {
    return options.task.empty() ? std::string("any task") : "task '" + options.task + "'";
  }
  // Throws the refusal for a log that holds records of the task that the tuner has not taken.
  void check_log(const std::filesystem::path& p) const {
    if (taken_logs.contains(key(p))) return;
    if (const std::size_t n = task_records(p); n > 0)
      throw py::value_error("log '" + p.string() + "' already holds " + std::to_string(n) + " records of " +
                            task_text() + " that this tuner has not taken: call tuner.resume('" + p.string() +
                            "', exact=True) before tune() to continue that run (nothing is measured twice), "
                            "or log to another file");
  }
};

// Holds a tuner's mutex, taken with the GIL released: a thread that holds the mutex and waits for
// the GIL (a Python constraint during ask) never waits on one that holds the GIL and waits for
// the mutex.
struct TunerLock {
  std::unique_lock<std::mutex> lock;
  explicit TunerLock(const PyTuner& t) : lock(t.mutex, std::defer_lock) {
    py::gil_scoped_release release;
    lock.lock();
  }
};

PyTrial PyTuner::tell(const py::handle& config, Measurement m) {
  // Any valid config not told before, asked or not (docs/python.md).
  {
    TunerLock locked(*this);
    const Config c = space.config(config);
    const tunekit::Trial& t = checked(space.errors, [&]() -> const tunekit::Trial& { return tuner->tell(c, std::move(m)); });
    if (log) log->write(space.space, tunekit::Record{options.task, options.device, t.config, t.measurement,
                                                     tunekit::utc_timestamp()});
    return to_py(space, t);
  }
}

// What Tuner.tune returns to Python, and (empty when there is none) the warning of a run in
// which every config failed, with the first failure.
std::pair<py::dict, std::string> tune_result(const PyTuner& t, const tunekit::TuneResult& r) {
  py::dict d;
  d["trials"] = r.trials;
  d["reason"] = std::string(tunekit::to_string(r.reason));
  d["best"] = r.best ? py::cast(to_py(t.space, *r.best)) : py::none();
  std::string warning;
  const tunekit::History& h = t.tuner->history();
  if (!r.best && !h.empty()) {
    const tunekit::Trial& first = h[0];
    warning = "Tuner.tune: every one of the " + std::to_string(h.size()) +
              " configs measured failed, so there is no best; the first, " + t.space.space.describe(first.config) +
              ": " + std::string(tunekit::to_string(first.measurement.status)) +
              (first.measurement.error.empty() ? std::string() : ": " + first.measurement.error);
  }
  return {std::move(d), std::move(warning)};
}

// Tuner.tune's end: the result, after the warning of a run in which every config failed.
py::dict tune_end(std::pair<py::dict, std::string> r) {
  if (!r.second.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, r.second.c_str(), 1) != 0) throw py::error_already_set();
  return std::move(r.first);
}

// The config of a replay kernel's space from a dict or index list.
Config kernel_config(const tunekit::ReplayKernel& k, const py::handle& h) {
  PySpace s{k.space(), std::make_shared<PythonErrorSlot>()};
  return s.config(h);
}

tunekit::ReplayKernel load_dataset(const std::filesystem::path& path, double overhead, double flop,
                                   const std::string& name, const std::string& objective,
                                   std::optional<bool> higher_is_better) {
  tunekit::ReplayOptions o{.overhead_seconds = overhead, .flop = flop, .name = name, .objective = objective,
                           .higher_is_better = higher_is_better};
  return tunekit::replay_from_file(path, std::move(o));
}

}  // namespace

PYBIND11_MODULE(_tunekit, m) {
  m.doc() = "tunekit: ML-guided auto-tuning (C++20) from Python; see docs/python.md";

  py::register_exception<tunekit::DatasetError>(m, "DatasetError", PyExc_ValueError);

  py::exec(R"py(
class ConfigValues(dict):
    """The knobs and constants a constraint sees, by name; another name is a ValueError that says
    which names there are."""
    __slots__ = ("what",)

    def __missing__(self, key):
        raise ValueError(f"{self.what} looks up {key!r}, which is no knob or constant added before it "
                         f"(it sees: {', '.join(self) or 'nothing'})")
)py", m.attr("__dict__"));
  config_values_type = py::object(m.attr("ConfigValues")).release().ptr();  // kept for the module's life
  py::register_exception<tunekit::RecordError>(m, "RecordError", PyExc_ValueError);

  py::enum_<tunekit::Status>(m, "Status", "Outcome of measuring one configuration")
      .value("ok", tunekit::Status::ok)
      .value("build_error", tunekit::Status::build_error)
      .value("runtime_error", tunekit::Status::runtime_error)
      .value("timeout", tunekit::Status::timeout)
      .value("wrong_result", tunekit::Status::wrong_result)
      .value("excluded", tunekit::Status::excluded);

  py::class_<Rng>(m, "Rng", "tunekit's random generator (Boost's mt19937_64: the same sequence everywhere)")
      .def(py::init([](std::uint64_t seed) { return Rng(seed); }), py::arg("seed") = 0)
      .def("__call__", [](Rng& r) { return static_cast<std::uint64_t>(r()); }, "The next 64-bit draw");
  m.def("measurement_rng", [](std::uint64_t seed, std::uint64_t i) { return tunekit::derive_stream(seed, i); },
        py::arg("measurement_seed"), py::arg("i"),
        "The generator Tuner::tune measures trial i with (stream i of the measurement seed)");

  py::class_<Measurement>(m, "Measurement", "The result of measuring one configuration (times in seconds)")
      .def_static("from_samples", &Measurement::from_samples, py::arg("samples"), py::arg("cost") = -1.0,
                  "A success from the seconds of its timed runs; cost defaults to their sum")
      .def_static("failure", &Measurement::failure, py::arg("status"), py::arg("error"), py::arg("cost") = 0.0,
                  "A failed measurement (any status but ok)")
      .def_readonly("status", &Measurement::status)
      .def_readonly("samples", &Measurement::samples)
      .def_readonly("mean", &Measurement::mean)
      .def_readonly("std", &Measurement::std)
      .def_readonly("cost", &Measurement::cost)
      .def_readonly("error", &Measurement::error)
      .def_property_readonly("ok", &Measurement::ok)
      .def("__repr__", [](const Measurement& x) {
        return "Measurement(" + std::string(tunekit::to_string(x.status)) + ", mean=" + std::to_string(x.mean) +
               (x.error.empty() ? "" : ", error='" + x.error + "'") + ")";
      });

  py::class_<PyTrial>(m, "Trial", "One measured configuration")
      .def_readonly("config", &PyTrial::config)
      .def_readonly("indices", &PyTrial::indices)
      .def_readonly("index", &PyTrial::index)
      .def_readonly("measurement", &PyTrial::measurement)
      .def_readonly("tuning_seconds", &PyTrial::tuning_seconds)
      .def("__repr__", [](const PyTrial& t) {
        return "Trial(" + py::repr(t.config).cast<std::string>() + ", " + std::string(tunekit::to_string(t.measurement.status)) + ")";
      });

  py::class_<PySpace>(m, "SearchSpace", "A search space: knobs, constants and constraints (add_* return the space)")
      .def(py::init<>())
      .def("add_ordinal", [](PySpace& s, std::string name, std::vector<std::int64_t> values) -> PySpace& {
             s.space.add(Knob::ordinal(std::move(name), std::move(values)));
             return s;
           }, py::arg("name"), py::arg("values"), py::return_value_policy::reference_internal)
      .def("add_range", [](PySpace& s, std::string name, std::int64_t lo, std::int64_t hi, std::int64_t step) -> PySpace& {
             s.space.add(Knob::range(std::move(name), lo, hi, step));
             return s;
           }, py::arg("name"), py::arg("lo"), py::arg("hi"), py::arg("step") = 1,
           py::return_value_policy::reference_internal)
      .def("add_power_of_two", [](PySpace& s, std::string name, std::int64_t lo, std::int64_t hi) -> PySpace& {
             s.space.add(Knob::power_of_two(std::move(name), lo, hi));
             return s;
           }, py::arg("name"), py::arg("lo"), py::arg("hi"), py::return_value_policy::reference_internal)
      .def("add_power_of_two", [](PySpace& s, std::string name, std::vector<std::int64_t> values) -> PySpace& {
             s.space.add(Knob::power_of_two(std::move(name), std::move(values)));
             return s;
           }, py::arg("name"), py::arg("values"), py::return_value_policy::reference_internal)
      .def("add_boolean", [](PySpace& s, std::string name) -> PySpace& {
             s.space.add(Knob::boolean(std::move(name)));
             return s;
           }, py::arg("name"), py::return_value_policy::reference_internal)
      .def("add_categorical", [](PySpace& s, std::string name, std::vector<std::string> labels) -> PySpace& {
             s.space.add(Knob::categorical(std::move(name), std::move(labels)));
             return s;
           }, py::arg("name"), py::arg("labels"), py::return_value_policy::reference_internal)
      .def("add_split", [](PySpace& s, std::string name, std::int64_t extent, int parts, bool pow2) -> PySpace& {
             s.space.add(Knob::split(std::move(name), extent, parts, pow2));
             return s;
           }, py::arg("name"), py::arg("extent"), py::arg("parts"), py::arg("power_of_two_factors") = false,
           py::return_value_policy::reference_internal)
      .def("add_constant", [](PySpace& s, std::string name, std::int64_t value) -> PySpace& {
             s.space.add_constant(std::move(name), value);
             return s;
           }, py::arg("name"), py::arg("value"), py::return_value_policy::reference_internal)
      .def("add_constraint", [](PySpace& s, std::string description, py::function predicate) -> PySpace& {
             s.add_python_constraint(std::move(description), std::move(predicate));
             return s;
           }, py::arg("description"), py::arg("predicate"), py::return_value_policy::reference_internal,
           "A constraint: predicate(values) -> bool over a dict of the knobs and constants added before it")
      .def("add_inactive", [](PySpace& s, std::string knob, std::string value, std::string when_description,
                              py::function when) -> PySpace& {
             std::string what = "the condition '" + when_description + "' of inactive knob '" + knob + "'";
             s.space.add_inactive(knob, value, std::move(when_description),
                                  s.python_predicate(std::move(when), std::move(what)));
             return s;
           }, py::arg("knob"), py::arg("value"), py::arg("when_description"), py::arg("when"),
           py::return_value_policy::reference_internal,
           "The knob is unused where when(values) holds; there its one valid value is `value` (as str: '1', "
           "'shared'), and the searches' moves set it (SearchSpace::add_inactive)")
      .def("restrict_to", [](PySpace& s, std::string description, const py::iterable& configs) -> PySpace& {
             std::vector<std::uint64_t> members;
             for (auto c : configs) members.push_back(s.space.to_index(s.config(c)));
             s.space.add_constraint(tunekit::membership(std::move(description), std::move(members)));
             return s;
           }, py::arg("description"), py::arg("configs"), py::return_value_policy::reference_internal,
           "A membership constraint: exactly these configs (dicts or index lists) are valid")
      .def_property_readonly("names", [](const PySpace& s) {
        std::vector<std::string> n;
        for (const auto& k : s.space.knobs()) n.push_back(k.name());
        return n;
      })
      .def_property_readonly("constants", [](const PySpace& s) {
        py::dict d;
        for (const auto& k : s.space.constants()) d[py::str(k.name)] = k.value;
        return d;
      })
      .def("knob_values", [](const PySpace& s, const std::string& name) {
        const Knob& k = s.space.knob(s.space.knob_index(name));
        py::list l;
        for (std::size_t i = 0; i < k.size(); ++i) l.append(knob_value(k, i));
        return l;
      }, py::arg("name"))
      .def_property_readonly("dimensions", [](const PySpace& s) { return s.space.dimensions(); })
      .def_property_readonly("product_size", [](const PySpace& s) { return s.space.product_size(); })
      .def("count_valid", [](const PySpace& s) { return checked(s.errors, [&] { return s.space.count_valid(); }); })
      .def("is_valid", [](const PySpace& s, const py::handle& c) {
        const Config x = s.config(c);
        return checked(s.errors, [&] { return s.space.is_valid(x); });
      }, py::arg("config"))
      .def("sample", [](const PySpace& s, Rng& rng) {
        return s.values(checked(s.errors, [&] { return s.space.sample(rng); }));
      }, py::arg("rng"))
      .def("describe", [](const PySpace& s, const py::handle& c) { return s.space.describe(s.config(c)); },
           py::arg("config"))
      .def("indices", [](const PySpace& s, const py::handle& c) { return s.config(c); }, py::arg("config"))
      .def("values", [](const PySpace& s, const Config& c) { return s.values(c); }, py::arg("indices"));

  py::class_<tunekit::ReplayKernel>(m, "ReplayKernel", "A recorded tuning space replayed offline")
      .def_static("load", &load_dataset, py::arg("path"), py::arg("overhead") = 1.0, py::arg("flop") = 0.0,
                  py::arg("name") = "", py::arg("objective") = "", py::arg("higher_is_better") = py::none(),
                  "A dataset CSV (shared/datasets), or a Kernel Tuner cache file or T4 results file (.json), "
                  "gzipped or not (.gz), as tunekit-replay loads them; objective: what a cache or T4 file is "
                  "replayed by (its own when empty; another than time, better higher, as 1 / it), "
                  "higher_is_better: its direction (Kernel Tuner's default for the name when None)")
      .def_property_readonly("space", [](const tunekit::ReplayKernel& k) {
        return PySpace{k.space(), std::make_shared<PythonErrorSlot>()};
      })
      .def_property_readonly("name", &tunekit::ReplayKernel::name)
      .def_property_readonly("optimum_ms", &tunekit::ReplayKernel::optimum_ms)
      .def_property_readonly("objective", [](const tunekit::ReplayKernel& k) { return k.options().objective; })
      .def_property_readonly("higher_is_better", [](const tunekit::ReplayKernel& k) {
        return k.options().higher_is_better.value_or(false);
      })
      .def_property_readonly("row_count", &tunekit::ReplayKernel::row_count)
      .def_property_readonly("failed_count", &tunekit::ReplayKernel::failed_count)
      .def("recorded_ms", [](const tunekit::ReplayKernel& k, const py::handle& c) {
        return k.recorded_ms(kernel_config(k, c));
      }, py::arg("config"));

  py::class_<PyReplayTrace>(m, "ReplayTrace", "One replayed run: trials, score and found score after each")
      .def_readonly("trials", &PyReplayTrace::trials)
      .def_readonly("score", &PyReplayTrace::score)
      .def_readonly("found", &PyReplayTrace::found);

  py::class_<PyTuner>(m, "Tuner", "A preset's tuner (preset_names() lists them) over a search space, driven by ask/tell")
      .def(py::init([](const PySpace& space, const std::string& preset, std::size_t trials, double seconds,
                       std::size_t plan_size, std::size_t parallel, std::uint64_t seed, std::string task,
                       std::string device, std::optional<std::filesystem::path> log, bool resume) {
             tunekit::TunerOptions o{.budget = {.trials = trials, .seconds = seconds},
                                     .plan_size = plan_size,
                                     .task = std::move(task),
                                     .device = std::move(device),
                                     .parallel = parallel};
             auto t = std::make_unique<PyTuner>();
             t->space = space;
             t->preset = preset;
             t->tuner = make_tuner(preset, space.space, o);
             t->rng = Rng(seed);
             t->options = o;
             if (resume && !log) throw py::value_error("Tuner: resume=True resumes from log=, and no log was given");
             if (log) {
               if (const std::size_t n = t->task_records(*log); n > 0) {
                 if (!resume)
                   throw py::value_error("log '" + log->string() + "' already holds " + std::to_string(n) +
                                         " records of " + t->task_text() + ": Tuner(..., log='" + log->string() +
                                         "', resume=True) continues that run from them (nothing is measured "
                                         "twice), or log to another file");
                 t->tuner->resume(*log, t->options.task, /*exact=*/false);
               }
               t->log = std::make_unique<tunekit::RecordWriter>(*log);
               t->log_path = *log;
               t->taken_logs.insert(PyTuner::key(*log));
             }
             return t;
           }),
           py::arg("space"), py::arg("preset") = std::string(tunekit::default_preset), py::kw_only(), py::arg("trials") = 1000,
           py::arg("seconds") = std::numeric_limits<double>::infinity(), py::arg("plan_size") = 64,
           py::arg("parallel") = 0, py::arg("seed") = 0, py::arg("task") = "", py::arg("device") = "",
           py::arg("log") = py::none(), py::arg("resume") = false)
      .def_readonly("preset", &PyTuner::preset)
      .def_property_readonly("space", [](const PyTuner& t) { return t.space; })
      .def("ask", [](PyTuner& t, std::size_t n, Rng* rng) {
        TunerLock locked(t);
        const std::vector<Config> batch =
            checked(t.space.errors, [&] { return t.tuner->ask(n, rng ? *rng : t.rng); }, /*release=*/true);
        py::list out;
        for (const auto& c : batch) out.append(t.space.values(c));
        return out;
      }, py::arg("n") = 1, py::arg("rng") = nullptr,
         "Up to n configs to measure (dicts), from the tuner's generator or rng; the GIL is released meanwhile")
      .def("tell", &PyTuner::tell, py::arg("config"), py::arg("measurement"),
           "Records a measurement (and appends it to the log, if any); returns the Trial. Any valid config not "
           "told before is taken, asked or not (one not asked, e.g. a known good config, counts as a trial like "
           "the others and is not asked again); a config told before or invalid is a ValueError")
      .def_property_readonly("history", [](const PyTuner& t) {
        TunerLock locked(t);
        std::vector<PyTrial> out;
        for (const auto& x : t.tuner->history()) out.push_back(to_py(t.space, x));
        return out;
      })
      .def_property_readonly("best", [](const PyTuner& t) -> std::optional<PyTrial> {
        TunerLock locked(t);
        const auto* b = t.tuner->history().best();
        if (!b) return std::nullopt;
        return to_py(t.space, *b);
      })
      .def_property_readonly("pending", [](const PyTuner& t) { TunerLock locked(t); return t.tuner->pending(); })
      .def_property_readonly("budget_spent", [](const PyTuner& t) { TunerLock locked(t); return t.tuner->budget_spent(); })
      .def("forget_pending", [](PyTuner& t) { TunerLock locked(t); t.tuner->forget_pending(); })
      .def_property_readonly("tuning_seconds", [](const PyTuner& t) { TunerLock locked(t); return t.tuner->tuning_seconds(); })
      .def_property_readonly("search_seconds", [](const PyTuner& t) { TunerLock locked(t); return t.tuner->search_seconds(); })
      .def_property_readonly("measurement_seconds", [](const PyTuner& t) { TunerLock locked(t); return t.tuner->measurement_seconds(); })
      .def("resume", [](PyTuner& t, const std::filesystem::path& path, std::optional<std::string> task, bool exact) {
        TunerLock locked(t);
        const std::size_t n = t.tuner->resume(path, task.value_or(t.options.task), exact);
        t.taken_logs.insert(PyTuner::key(path));
        return n;
      }, py::arg("path"), py::arg("task") = py::none(), py::arg("exact") = false,
         "Takes the records of the task (default: the tuner's) from a log: told at once, or with exact=True "
         "kept for tune() to re-run the search up to where the log ends")
      .def("evaluate", [](PyTuner& t, tunekit::ReplayKernel& k, const py::handle& c, Rng& rng) {
        const Config x = t.space.config(c);
        TunerLock locked(t);
        py::gil_scoped_release release;
        return t.tuner->evaluate(k, x, rng);
      }, py::arg("kernel"), py::arg("config"), py::arg("rng"), "Measures a config on a replay kernel with the preset's evaluator")
      .def("tune", [](PyTuner& t, tunekit::ReplayKernel& k, Rng* rng, std::optional<std::string> log) {
        return tune_end([&] {
          TunerLock locked(t);
          const std::string path = log.value_or(t.log_path.string());
          if (!path.empty()) t.check_log(path);
          const tunekit::TuneResult r =
              checked(t.space.errors, [&] { return t.tuner->tune(k, rng ? *rng : t.rng, path); }, /*release=*/true);
          if (!path.empty()) t.taken_logs.insert(PyTuner::key(path));
          return tune_result(t, r);
        }());
      }, py::arg("kernel"), py::arg("rng") = nullptr, py::arg("log") = py::none(),
         "Tunes a replay kernel to the budget (C++ Tuner::tune; the GIL is released), logging to log (default: "
         "the tuner's log, if any)")
      .def("tune", [](PyTuner& t, py::function run, Rng* rng, std::optional<std::string> log, double flop) {
        return tune_end([&] {
          TunerLock locked(t);
          PyKernel kernel{&t.space, flop, std::make_shared<PythonCallable>(std::move(run))};
          const std::string path = log.value_or(t.log_path.string());
          if (!path.empty()) t.check_log(path);
          const tunekit::TuneResult r =
              checked(t.space.errors, [&] { return t.tuner->tune(kernel, rng ? *rng : t.rng, path); }, /*release=*/true);
          if (!path.empty()) t.taken_logs.insert(PyTuner::key(path));
          return tune_result(t, r);
        }());
      }, py::arg("run"), py::arg("rng") = nullptr, py::arg("log") = py::none(), py::arg("flop") = 0.0,
         "Tunes a kernel written in Python to the budget with the preset's evaluator (C++ Tuner::tune): "
         "run(config, runs) returns the seconds of each run, or a Status or (Status, message) for a failure; "
         "logs to log (default: the tuner's log, if any); warns (RuntimeWarning) with the first error when every "
         "config failed");

  m.def("replay", [](const tunekit::ReplayKernel& kernel, const std::string& preset, std::size_t budget,
                     std::uint64_t seed, std::size_t plan_size) {
    tunekit::ReplayKernel k = kernel;
    PySpace space{k.space(), std::make_shared<PythonErrorSlot>()};
    auto tuner = make_tuner(preset, k.space(), {.budget = {.trials = budget}, .plan_size = plan_size});
    tunekit::ReplayTrace trace;
    {
      py::gil_scoped_release release;
      Rng rng(seed);
      trace = tuner->replay(k, rng);
    }
    PyReplayTrace out;
    for (const auto& t : trace.trials) out.trials.push_back(to_py(space, t));
    out.score = std::move(trace.score);
    out.found = std::move(trace.found);
    return out;
  }, py::arg("kernel"), py::arg("preset") = std::string(tunekit::default_preset), py::arg("budget") = 400, py::arg("seed") = 0,
     py::arg("plan_size") = 64, "One run of tunekit-replay: the preset on a recorded space with this seed");

  m.attr("DEFAULT_PRESET") = std::string(tunekit::default_preset);
  m.def("preset_names", [] {
    std::vector<std::string> n;
    for (const auto& p : tunekit::preset_infos) n.emplace_back(p.name);
    return n;
  });
  m.def("presets", [] {
    py::dict d;
    for (const auto& p : tunekit::preset_infos) d[py::str(std::string(p.name))] = std::string(p.description);
    return d;
  }, "Every preset's name and description");
}
