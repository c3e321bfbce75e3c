// Compile-time benchmark: a program that tunes a recorded space with tunekit::TpeGpRfRestartsTuner
// (the default before tpe).
#include "tune_main.hpp"

int main(int argc, char** argv) { return tune_main<tunekit::TpeGpRfRestartsTuner>(argc, argv); }
