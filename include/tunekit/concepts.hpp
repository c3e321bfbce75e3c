#pragma once
/// \file
/// The concepts every part of tunekit is written against, one header per role under concepts/
/// (a part includes only its own role's concept; this header includes them all).
///
/// Each concept comes with a `check_*<T>()` function whose `static_assert`s name the member that
/// a type misses; the entry points (Tuner, tune) call them, so a type that does not fit gets a
/// message that says what to add rather than a page of template errors.

#include "tunekit/concepts/acquisition.hpp"
#include "tunekit/concepts/callback.hpp"
#include "tunekit/concepts/evaluator.hpp"
#include "tunekit/concepts/farm.hpp"
#include "tunekit/concepts/kernel.hpp"
#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/concepts/scheduler.hpp"
#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/concepts/uncertainty.hpp"
