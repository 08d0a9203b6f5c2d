#!/usr/bin/env bash
# Installs what PetNet needs on Debian bookworm (run as root; does nothing when everything is there).
set -euo pipefail
pkgs=(make gcc pkg-config petsc-dev slepc-dev libopenmpi-dev openmpi-bin libopenblas-dev zlib1g-dev dataset-fashion-mnist
      python3 python3-numpy python3-h5py python3-torch python3-petsc4py python3-mpi4py gnuplot-nox python3-onnx libdnnl-dev man-db fortunes fortunes-min)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q "${missing[@]}"
fi
# OpenBLAS as the BLAS that PETSc and PetNet link (libblas.so.3)
if [ -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ] && ! readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 | grep -q openblas; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
fi
echo "setup: ok"
