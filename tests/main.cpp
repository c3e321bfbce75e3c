// The doctest runner of the tunekit tests. Stochastic tests use fixed seeds (see each test).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
