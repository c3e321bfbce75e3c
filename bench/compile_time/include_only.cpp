// Compile-time benchmark: the cost of parsing <tunekit/tunekit.hpp> alone (nothing instantiated).
#include <tunekit/tunekit.hpp>

int main() { return 0; }
