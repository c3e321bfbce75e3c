#pragma once
/// \file
/// Deferred: a type named through a template parameter, so that the code that uses it in a
/// template is compiled only in the files that instantiate the template.

namespace tunekit::detail {

/// T, named through U, a parameter of the template that uses it (U is always void). The
/// expressions of that template's functions in T (Eigen's expression templates, say) then depend
/// on U: the compiler checks and instantiates them where the template is used, not in every file
/// that includes its header (docs/getting-started.md, "Compile time").
template <class T, class U>
struct deferred {
  using type = T;
};
template <class T, class U>
using Deferred = typename deferred<T, U>::type;

}  // namespace tunekit::detail
