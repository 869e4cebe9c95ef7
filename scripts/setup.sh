#!/usr/bin/env bash
# Installs the Debian packages orrery needs that are missing (build, tests, demo data; clang, its
# sanitizer/libFuzzer runtime and its OpenMP for the fuzz targets; pybind11 and Debian's Python with
# numpy, scipy, scikit-learn, anndata, matplotlib, tqdm, pytest, pip and venv for the Python package; Chromium
# and Pillow for the interactive map's browser tests; Open MPI and mpi4py for multi-process
# runs and their tests), then builds the Debian demo corpus
# of configs/plsv_debian.json in data/debian/ (git-ignored; scripts/debian_corpus.sh) when absent.
# Safe to run repeatedly: it installs and builds nothing when everything is present.
set -euo pipefail
packages=(cmake g++ make libgtest-dev libgmock-dev nlohmann-json3-dev zlib1g-dev libhnswlib-dev dataset-fashion-mnist
          clang libclang-rt-14-dev libomp-14-dev libfftw3-dev libkissfft-dev time
          pybind11-dev python3-dev python3-numpy python3-scipy python3-sklearn python3-anndata python3-matplotlib python3-tqdm
          python3-pytest python3-pip python3-setuptools python3-venv chromium python3-pil fonts-dejavu-core
          libopenmpi-dev openmpi-bin python3-mpi4py)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# After any `apt-get update` above: under Acquire::Languages "none" that one drops the English
# descriptions the corpus is made of, and debian_corpus.sh fetches them again.
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -s "$root/data/debian/docs.txt" ] || [ ! -s "$root/data/debian/labels.txt" ]; then
  echo "setup: building the Debian demo corpus in data/debian" >&2
  bash "$root/scripts/debian_corpus.sh" >&2
fi
