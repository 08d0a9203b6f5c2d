#!/bin/sh
# PyTorch reference check of PetNet's HDF5 model files (suite line io_torch_check, after io_torch_write):
#   1. PyTorch (float64) loads tests/out/io_torch.h5 written by NetSave() and must reproduce PetNet's output
#      in tests/out/io_torch_data.h5 to 1e-12 relative;
#   2. a PyTorch model is saved to tests/out/io_from_torch.h5 (+ _data.h5) for io_torch_import_* to load in PetNet.
# Fails (does not skip) without PyTorch or h5py: CI installs python3-torch and python3-h5py.
# The runner appends PETSc options (-malloc_debug ...): they are ignored.
cd "$(dirname "$0")/.." || exit 2
exec /usr/bin/python3 share/python/petnet_torch.py selftest tests/out/io_torch tests/out/io_from_torch
