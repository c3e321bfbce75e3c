#pragma once
// A small command-line reader for tunekit's programs: `--name value` options and `--flag`s,
// each declared with its default; unknown options and bad values end the program with a message.

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tunekit::cli {

class CommandLine {
 public:
  /// Reads argv; `--help` prints `usage` and exits 0.
  CommandLine(int argc, char** argv, std::string program, std::string usage)
      : program_(std::move(program)) {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::cout << usage;
        std::exit(0);
      }
      if (a.rfind("--", 0) != 0) fail("unexpected argument '" + a + "'");
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
        values_[a].push_back(argv[++i]);
      else
        values_[a].push_back("");
    }
  }

  /// Whether a flag was given (a flag takes no value).
  bool flag(const std::string& name) {
    used_.insert(name);
    const auto it = values_.find(name);
    if (it == values_.end()) return false;
    for (const auto& v : it->second)
      if (!v.empty()) fail(name + " takes no value");
    return true;
  }

  std::string text(const std::string& name, const std::string& fallback) {
    const auto v = value(name);
    return v ? *v : fallback;
  }

  /// Whether an option was given (with or without a value).
  bool given(const std::string& name) const { return values_.contains(name); }

  /// Every value of an option that may be given several times, in order (empty when absent).
  std::vector<std::string> texts(const std::string& name) {
    used_.insert(name);
    const auto it = values_.find(name);
    if (it == values_.end()) return {};
    for (const auto& v : it->second)
      if (v.empty()) fail("option " + name + " needs a value");
    return it->second;
  }

  /// A positive integer.
  std::size_t count(const std::string& name, std::size_t fallback) { return integer(name, fallback, 1); }

  /// An integer >= 0 (for options whose 0 means something: a device ordinal, "none").
  std::size_t natural(const std::string& name, std::size_t fallback) { return integer(name, fallback, 0); }

  /// A finite number >= 0.
  double real(const std::string& name, double fallback) {
    const auto v = value(name);
    if (!v) return fallback;
    std::size_t pos = 0;
    double x = 0;
    try {
      x = std::stod(*v, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != v->size() || !(x >= 0) || !std::isfinite(x))
      fail(name + " needs a non-negative number, got '" + *v + "'");
    return x;
  }

  /// Ends the program if an option was given that no call above asked for.
  void reject_unknown() {
    for (const auto& [name, v] : values_)
      if (!used_.contains(name)) fail("unknown option " + name);
  }

  [[noreturn]] void fail(const std::string& msg) const {
    std::cerr << program_ << ": " << msg << "\n(see " << program_ << " --help)\n";
    std::exit(2);
  }

 private:
  std::size_t integer(const std::string& name, std::size_t fallback, long long least) {
    const auto v = value(name);
    if (!v) return fallback;
    std::size_t pos = 0;
    long long x = 0;
    try {
      x = std::stoll(*v, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != v->size() || x < least)
      fail(name + (least > 0 ? " needs a positive integer" : " needs a non-negative integer") + ", got '" + *v + "'");
    return static_cast<std::size_t>(x);
  }

  const std::string* value(const std::string& name) {
    used_.insert(name);
    const auto it = values_.find(name);
    if (it == values_.end()) return nullptr;
    if (it->second.size() > 1) fail("option " + name + " is given more than once");
    if (it->second.back().empty()) fail("option " + name + " needs a value");
    return &it->second.back();
  }

  std::string program_;
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> used_;
};

}  // namespace tunekit::cli
