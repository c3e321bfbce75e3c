#!/usr/bin/env bash
# Installs the Debian 12 packages tunekit needs to build, test and run its tools. Run as root (or
# with sudo available). Does nothing when everything is installed already.
#   scripts/install-deps.sh                   tunekit's packages
#   scripts/install-deps.sh PKG...            those and PKG... (the sanitizer builds' extras)
#   scripts/install-deps.sh --only PKG...     PKG... alone (the fuzz targets need no more)
set -euo pipefail
only=0
if [[ ${1:-} == --only ]]; then only=1; shift; fi
packages=(
  g++ make cmake ninja-build      # toolchain
  libeigen3-dev                   # Eigen: matrices for the surrogates
  libboost-dev                    # Boost.Math and Boost.Random (header-only parts)
  nlohmann-json3-dev              # tuning records (JSON lines)
  doctest-dev                     # tests
  zlib1g-dev                      # tests: zlib writes the gzip reader's inputs
  libbenchmark-dev                # bench/
  libopenblas-dev                 # tune_gemm compares with OpenBLAS's sgemm
  libdnnl-dev                     # tune_conv2d compares with oneDNN's convolution
  ocl-icd-opencl-dev              # oneDNN's CMake package requires OpenCL (its GPU runtime)
  python3-dev pybind11-dev        # the Python module (python/), built with /usr/bin/python3
  python3-pytest                  # its tests (tests/python)
  python3-venv python3-setuptools python3-wheel
                                  # pip install of the module in a venv, offline (docs/python.md)
  python3-numpy python3-scipy python3-jsonschema python3-xmltodict python3-packaging
                                  # the vendored Kernel Tuner (shared/vendor/README.md)
  python3-optuna                  # tunekit.optuna.Sampler and its tests
  libopenmpi-dev openmpi-bin      # the MPI measurement farm (tunekit::mpi, optional; docs/farm.md)
)
if [[ $only -eq 1 ]]; then packages=("$@"); else packages+=("$@"); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
