#!/usr/bin/python3
"""Damaged copies of the model files PFX.h5 and PFX.petnet (written by NetSave(): "dense:6,relu,dense:3" on 12 inputs, by
io_corrupt_write) for the io_*_error tests, each of which loads one and must stop with an error naming file and tensor;
and of PFX_norm.h5, PFX_norm.petnet ("dense:6,batchnorm,relu,dense:3" with an input normalisation): one bit flipped in
the header (normalisation, layer list), a negative running variance under a valid checksum.
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


def header_crc(spec, shape, nparams, nbuffers, norm=None, grid=0):
    """The header checksum of format version 4 (NetIOHeaderChecksum_Private() in src/net/netio.c)."""
    raw = spec.encode() + b"\0" + shape.encode() + b"\0" + struct.pack("<qqqB", nparams, nbuffers, grid, norm is not None)
    return zlib.crc32(raw + (struct.pack("<3d", *norm) if norm is not None else b"")) & 0xffffffff


def flipbit(x, bit):
    """float64 x with one bit of its IEEE-754 pattern flipped"""
    return struct.unpack("<d", struct.pack("<Q", struct.unpack("<Q", struct.pack("<d", x))[0] ^ (1 << bit)))[0]


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
    # a new attribute (modify() would keep the old string length); 6,000 deep, as an HDF5 attribute holds at most 64 KB;
    # the header checksum made to match, so that the parser, not the checksum, has to refuse it
    a = f["petnet"].attrs
    a["spec"] = np.bytes_(nested(6000))
    a["header_crc32"] = np.bytes_(f"{header_crc(nested(6000), a['input_shape'].decode(), int(a['nparams']), int(a['nbuffers'])):08x}")


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
version = struct.unpack(">i", data[4:8])[0]
hdr = 40 + (4 + 3 * 8 if version >= 3 else 0) + (8 if version >= 4 else 0)  # bytes before the spec; version 4: grid, crc
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
if version >= 4:  # with a matching header checksum: the parser must refuse it
    nparams, nbuffers = struct.unpack(">ii", data[32:40])
    deep[hdr - 4 : hdr] = struct.pack(">I", header_crc(spec.decode(), "12", nparams, nbuffers))
open(pfx + "_depth.petnet", "wb").write(deep)
# the same model as if saved in grid mode on a 1-D grid (header "grid" 1, checksum updated): a sample was a grid point of
# 12 channels; loading it without a grid needs the shape of a whole field (-net_input_shape)
grid = bytearray(data)
grid[hdr - 8 : hdr] = struct.pack(">iI", 1, header_crc("dense:6,relu,dense:3", "12", *struct.unpack(">ii", data[32:40]), grid=1))
open(pfx + "_grid.petnet", "wb").write(grid)

# PFX_norm: "dense:6,batchnorm,relu,dense:3" on 12 inputs with an input normalisation (scale, mean, std). One bit of
# the header flipped (loaded unchecked, each predicted garbage: format version 3 had no header checksum):
#   mean, in its mantissa (binmean, h5mean), scale's exponent (h5scale), std's (binstd), "relu" -> "tanh" (binspec, h5spec)
# and a running_var below zero with its checksum updated (binvar, h5var): every prediction one class.
norm = bytearray(open(pfx + "_norm.petnet", "rb").read())
assert struct.unpack(">i", norm[4:8])[0] >= 4
speclen, nparams, nbuffers = struct.unpack(">i", norm[8:12])[0], *struct.unpack(">ii", norm[32:40])
hdr = 40 + 4 + 3 * 8 + 8
mean = norm.copy()
mean[44 + 8 + 5] ^= 0x02  # big-endian float64: byte 5 of mean is in its mantissa
open(pfx + "_binmean.petnet", "wb").write(mean)
std = norm.copy()
std[44 + 16 + 1] ^= 0x10  # the lowest exponent bit of std: std doubled or halved
open(pfx + "_binstd.petnet", "wb").write(std)
spec = norm.copy()
at = spec.find(b"relu", hdr)
spec[at : at + 4] = b"tanh"
open(pfx + "_binspec.petnet", "wb").write(spec)
var = norm.copy()
buffers = hdr + speclen + 8 + 8 * nparams  # running_mean (6), running_var (6)
var[buffers + 8 * 6 + 8 * 2 : buffers + 8 * 6 + 8 * 3] = struct.pack(">d", -0.5)
table = buffers + 8 * nbuffers + 4  # crc of 0.weight, 0.bias, 1.weight, 1.bias, 1.running_mean, 1.running_var, ...
var[table + 4 * 5 : table + 4 * 6] = struct.pack(">I", int(crc(np.frombuffer(bytes(var[buffers + 48 : buffers + 96]), dtype=">f8")), 16))
open(pfx + "_binvar.petnet", "wb").write(var)


def h5norm(name, edit):
    path = f"{pfx}_{name}.h5"
    shutil.copyfile(pfx + "_norm.h5", path)
    with h5py.File(path, "r+") as f:
        edit(f)


def attr(key, value):
    def edit(f):
        del f["petnet"].attrs[key]  # a new attribute of the same type, as a bit flip on disk would leave it
        f["petnet"].attrs[key] = value

    return edit


with h5py.File(pfx + "_norm.h5", "r") as f:
    a = dict(f["petnet"].attrs)
    rv = f["1.running_var"][...]
h5norm("h5mean", attr("input_mean", np.float64(flipbit(float(a["input_mean"]), 30))))
h5norm("h5scale", attr("input_scale", np.float64(flipbit(float(a["input_scale"]), 53))))
h5norm("h5spec", attr("spec", np.bytes_(a["spec"].decode().replace("relu", "tanh"))))
h5norm("h5var", lambda f: replace(f, "1.running_var", np.where(np.arange(6) == 2, -0.5, rv)))
print(f"{pfx}_*.h5, {pfx}_*.petnet written")
