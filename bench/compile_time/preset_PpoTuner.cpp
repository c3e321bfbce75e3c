// Compile-time benchmark: a program that tunes a recorded space with tunekit::PpoTuner.
#include "tune_main.hpp"

int main(int argc, char** argv) { return tune_main<tunekit::PpoTuner>(argc, argv); }
