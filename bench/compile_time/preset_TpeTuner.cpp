// Compile-time benchmark: a program that tunes a recorded space with tunekit::TpeTuner
// (the default preset).
#include "tune_main.hpp"

int main(int argc, char** argv) { return tune_main<tunekit::TpeTuner>(argc, argv); }
