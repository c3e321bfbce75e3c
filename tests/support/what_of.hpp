#pragma once
// The message of the exception of type E (any std::exception by default) that f() throws, or
// "(no exception)" when it returns normally; an exception of another type propagates.

#include <exception>
#include <string>
#include <utility>

namespace tunekit::test {

template <class E = std::exception, class F>
std::string what_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace tunekit::test
