#!/usr/bin/python3
"""Damaged copies of the model files PFX.h5 and PFX.petnet (written by NetSave(): "dense:6,relu,dense:3" on 12 inputs, by
io_corrupt_write) for the io_*_error tests, each of which loads one and must stop with an error naming file and tensor.
Usage: io_corrupt.py PFX. The runner may append PETSc options: they are ignored."""
import shutil
import struct
import sys
import zlib

import h5py
import numpy as np

pfx = sys.argv[1]


def crc(values):
    return f"{zlib.crc32(np.ascontiguousarray(values, dtype='<f8').reshape(-1).tobytes()) & 0xffffffff:08x}"


def h5copy(name, edit):
    path = f"{pfx}_{name}.h5"
    shutil.copyfile(pfx + ".h5", path)
    with h5py.File(path, "r+") as f:
        edit(f)


def replace(f, name, data, shape=None, checksum=True):
    """Dataset name replaced by data (any rank), keeping or overriding its attributes."""
    attrs = dict(f[name].attrs)
    del f[name]
    d = f.create_dataset(name, data=data)
    for k, v in attrs.items():
        d.attrs[k] = v
    if shape is not None:
        d.attrs["shape"] = np.bytes_(shape)
    if checksum:
        d.attrs["crc32"] = np.bytes_(crc(data))


def nested(depth):
    return "residual(" * depth + "relu" + ")" * depth + ",dense:3"


with h5py.File(pfx + ".h5", "r") as f:
    w0 = f["0.weight"][...]  # (6, 12): PyTorch's shape (format version 3)
    b0 = f["0.bias"][...]

# a weight stored 3-D where 6x12 is expected (as 256x28x28 for 784x256), a 3-D bias, a weight stored as its transpose
h5copy("rank3", lambda f: replace(f, "0.weight", w0.reshape(6, 3, 4)))
h5copy("bias3", lambda f: replace(f, "0.bias", b0.reshape(1, 2, 3)))
h5copy("transpose2d", lambda f: replace(f, "0.weight", w0.T.copy()))
h5copy("transpose", lambda f: replace(f, "0.weight", w0, shape="12,6"))  # the data right, its "shape" attribute not
# a NaN weight (with a matching checksum: the values themselves must be refused); an integer dataset
h5copy("nan", lambda f: replace(f, "2.weight", np.where(np.arange(18).reshape(3, 6) == 7, np.nan, f["2.weight"][...])))
h5copy("int", lambda f: replace(f, "0.bias", np.arange(6, dtype=np.int32)))
# one byte flipped in the middle of 0.weight, checksum left as written
h5copy("flip", lambda f: replace(f, "0.weight", np.frombuffer(bytes(b ^ (0x10 if i == 8 * 36 + 6 else 0) for i, b in enumerate(w0.astype("<f8").tobytes())), dtype="<f8").reshape(6, 12), checksum=False))
# a stored architecture nesting thousands of residual blocks (the parser must refuse it, not overflow its stack)
def deep(f):
    # a new attribute (modify() would keep the old string length); 6,000 deep, as an HDF5 attribute holds at most 64 KB
    f["petnet"].attrs["spec"] = np.bytes_(nested(6000))


h5copy("depth", deep)

# not damaged: the tensors rewritten as h5py may store them, weights in chunks of 2x5 values (the last ones partly
# filled), biases gzip-compressed: the checks of stored sizes must accept these (io_corrupt_layouts_ok)
def layouts(f):
    for name in [k for k in f if k != "petnet"]:
        data, attrs = f[name][...], dict(f[name].attrs)
        del f[name]
        extra = {"chunks": tuple(min(c, n) for c, n in zip((2, 5), data.shape))} if name.endswith("weight") else {"compression": "gzip"}
        d = f.create_dataset(name, data=data, **extra)
        for k, v in attrs.items():
            d.attrs[k] = v


h5copy("layouts", layouts)

# damaged files: cut in half; the superblock's signature overwritten; a tensor missing
model = open(pfx + ".h5", "rb").read()
open(pfx + "_truncated.h5", "wb").write(model[: len(model) // 2])
open(pfx + "_garbled.h5", "wb").write(b"garbage!" + model[8:])
h5copy("missing", lambda f: f.__delitem__("2.bias"))
# attributes HDF5 reads through fragile paths: the version as a string, the spec as a variable-length string (h5py's
# str) whose global-heap object claims a huge size: H5Aread() of that attribute hangs inside HDF5 1.10.8 (h5py too)
h5copy("attrtype", lambda f: f["petnet"].attrs.__setitem__("version", np.bytes_("2")))


def vlen(f):
    spec = f["petnet"].attrs["spec"].decode()
    del f["petnet"].attrs["spec"]
    f["petnet"].attrs["spec"] = spec


h5copy("vlen", vlen)
heap = bytearray(open(f"{pfx}_vlen.h5", "rb").read())
gcol = heap.find(b"GCOL")  # collection header (16 bytes), then object 1: index, refcount, reserved, size (8 bytes)
heap[gcol + 24] = 10
open(f"{pfx}_vlen.h5", "wb").write(heap)

# PETSc binary (big-endian): int32 header[10], (version 3) int32 normset + float64 scale, mean, std, spec, Vec
# (classid, n, n float64), buffers, int32 ntensors, crc[ntensors]
data = bytearray(open(pfx + ".petnet", "rb").read())
hdr = 40 + (4 + 3 * 8 if struct.unpack(">i", data[4:8])[0] >= 3 else 0)  # bytes before the spec
speclen = struct.unpack(">i", data[8:12])[0]
theta = hdr + speclen + 8  # first parameter: 0.weight[0]
flip = bytearray(data)
flip[theta + 8 * 36 + 6] ^= 0x10
open(pfx + "_flip.petnet", "wb").write(flip)
# a NaN in 0.bias (entries 72..77) with the checksum table updated, so the value check must catch it
nan = bytearray(data)
nan[theta + 8 * 74 : theta + 8 * 75] = struct.pack(">d", float("nan"))
bias = np.frombuffer(bytes(nan[theta + 8 * 72 : theta + 8 * 78]), dtype=">f8")
table = hdr + speclen + 8 + 8 * (6 * 12 + 6 + 3 * 6 + 3) + 4  # after ntensors: crc of 0.weight, 0.bias, ...
nan[table + 4 : table + 8] = struct.pack(">I", int(crc(bias), 16))
open(pfx + "_nan.petnet", "wb").write(nan)
# the 10,000-deep spec in a binary file (header length updated, everything after it unchanged)
spec = nested(10000).encode()
deep = bytearray(data[:8]) + struct.pack(">i", len(spec)) + data[12:hdr] + spec + data[hdr + speclen :]
open(pfx + "_depth.petnet", "wb").write(deep)
print(f"{pfx}_*.h5, {pfx}_*.petnet written")
