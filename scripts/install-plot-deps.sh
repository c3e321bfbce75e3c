#!/usr/bin/env bash
# Optional: installs what scripts/plot_ablations.py and scripts/plot_benchmarks.py need (Debian 12:
# python3-matplotlib). The build and the tests do not need it. Run as root (or with sudo
# available).
set -euo pipefail
dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null | grep -q "install ok installed" && exit 0
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo)
echo "install-plot-deps: installing python3-matplotlib"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
