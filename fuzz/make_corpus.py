#!/usr/bin/python3
"""Seed corpora of the dataset-reader fuzz harnesses (fuzz/fuzz_idx.c, fuzz_binarydata.c, fuzz_hdf5data.c) and the
format-version-3 and -4 seeds of the model readers (fuzz_h5model.c, fuzz_binmodel.c: files v3_*, v4_*; the older seeds were saved by
NetSave() of format version 2): a few small valid files and truncated or damaged variants, each under 20 KB, written
into fuzz/corpus/<name>/.
Run from the repository root: /usr/bin/python3 fuzz/make_corpus.py [NAME...] (needs python3-numpy and python3-h5py);
names (idx, binarydata, hdf5data, h5model) limit it to those corpora."""
import gzip
import io
import os
import struct
import sys
import zlib

import h5py
import numpy as np

N, ROWS, COLS = 8, 4, 3


ONLY = sys.argv[1:]


def out(name, fname, data):
    if ONLY and name not in ONLY:
        return
    os.makedirs(f"fuzz/corpus/{name}", exist_ok=True)
    assert len(data) < 20000, (fname, len(data))
    with open(f"fuzz/corpus/{name}/{fname}", "wb") as f:
        f.write(data)


def flip(data, at, value=0xA5):
    b = bytearray(data)
    b[at % len(b)] ^= value
    return bytes(b)


# idx: byte 0 options, bytes 1-2 labels length, labels file, images file (fuzz_idx.c)
def idx(dims, payload):
    head = bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    return head + payload


def idxcase(fname, images, labels, options=0):
    out("idx", fname, bytes([options]) + struct.pack(">H", len(labels)) + labels + images)


pixels = bytes((7 * i + 13) % 256 for i in range(N * ROWS * COLS))
labels = bytes(i % 10 for i in range(N))
img, lab = idx([N, ROWS, COLS], pixels), idx([N], labels)
gz = lambda b, level=9: gzip.compress(b, compresslevel=level, mtime=0)
idxcase("plain", img, lab)
idxcase("gzip", gz(img), gz(lab))
idxcase("gzip_limit1_classes", gz(img), gz(lab), options=1 | 4)
idxcase("gzip_stored_limit3", gz(img, 0), gz(lab, 0), options=2)
idxcase("flat_2d", idx([N, ROWS * COLS], pixels), lab)
idxcase("hwc_4d", idx([N, 2, 2, 3], pixels), lab)
idxcase("plain_truncated", img[: len(img) // 2], lab)
idxcase("gzip_truncated", gz(img)[:-9], gz(lab))
idxcase("gzip_crc", flip(gz(img, 0), len(gz(img, 0)) // 2), gz(lab), options=1)
idxcase("gzip_header", flip(gz(img), 2), gz(lab))
idxcase("gzip_isize", flip(gz(img), -1), gz(lab))
idxcase("bomb_header", gz(idx([100000000, ROWS, COLS], pixels)), gz(lab))
idxcase("huge_dims", idx([0xFFFFFFFF, 0xFFFF, 0xFFFF], pixels), lab)
idxcase("count_mismatch", img, idx([N - 1], labels[:-1]))
idxcase("label255", img, idx([N], labels[:-1] + b"\xff"), options=4)
idxcase("magic", flip(img, 3, 0x0F), lab)
idxcase("empty", b"", b"")

# binary: byte 0 options (bit 0: sample shape 2x2x1), then a PETSc binary file (fuzz_binarydata.c)
MAT, VEC = 1211216, 1211214
x = np.sin(np.arange(N * 4) * 0.37).reshape(N, 4)
t = (np.arange(N) % 3).astype(float)
vec = lambda v: struct.pack(">ii", VEC, len(v)) + np.asarray(v, ">f8").tobytes()
dense = struct.pack(">iiii", MAT, N, 4, -1) + x.astype(">f8").tobytes()
aij = (struct.pack(">iiii", MAT, N, 4, N * 4) + np.full(N, 4, ">i4").tobytes() + np.tile(np.arange(4), N).astype(">i4").tobytes()
       + x.astype(">f8").tobytes())


def bincase(fname, data, options=0):
    out("binarydata", fname, bytes([options]) + data)


bincase("dense", dense + vec(t))
bincase("aij", aij + vec(t), options=2)
bincase("vec", vec(x.ravel()) + vec(t), options=1)
bincase("regression", dense + vec(np.cos(np.arange(2 * N))))
bincase("truncated", (dense + vec(t))[:200])
bincase("no_targets", dense)
bincase("huge_rows", struct.pack(">iiii", MAT, 2**31 - 1, 4, -1) + dense[16:] + vec(t))
bincase("bad_cols", aij[: 16 + 4 * N] + struct.pack(">i", 99) + aij[16 + 4 * N + 4:] + vec(t))
bincase("bad_rowlens", aij[:16] + struct.pack(">i", -5) + aij[20:] + vec(t))
bincase("nan_target", dense + vec(np.where(np.arange(N) == 5, np.nan, t)))
bincase("vec_noshape", vec(x.ravel()) + vec(t))
bincase("empty", b"")


# hdf5: byte 0 options, then the HDF5 file (fuzz_hdf5data.c)
def h5case(fname, build, options=0):
    buf = io.BytesIO()
    with h5py.File(buf, "w", libver="earliest") as f:
        build(f)
    out("hdf5data", fname, bytes([options]) + buf.getvalue())
    return buf.getvalue()


def valid(f):
    f["inputs"] = x
    f["inputs"].attrs["sample_shape"] = "2x2x1"
    f["targets"] = t


good = h5case("valid", valid)
h5case("valid_limit", valid, options=1)
h5case("flat", lambda f: (f.create_dataset("inputs", data=x.ravel()), f.create_dataset("targets", data=t)))
h5case("int", lambda f: (f.create_dataset("inputs", data=(x * 10).astype(np.int16)), f.create_dataset("targets", data=t.astype(np.uint8))))
h5case("fixed_string_attr", lambda f: (f.create_dataset("inputs", data=x), f["inputs"].attrs.create("sample_shape", np.bytes_("4")), f.create_dataset("targets", data=t)))
h5case("numeric_attr", lambda f: (f.create_dataset("inputs", data=x), f["inputs"].attrs.create("sample_shape", [2, 2]), f.create_dataset("targets", data=t)))
h5case("rank3", lambda f: (f.create_dataset("inputs", data=x.reshape(N, 2, 2)), f.create_dataset("targets", data=t)))
h5case("targets_rank3", lambda f: (f.create_dataset("inputs", data=x), f.create_dataset("targets", data=np.zeros((N, 1, 1)))))
h5case("scalar", lambda f: (f.create_dataset("inputs", data=3.0), f.create_dataset("targets", data=t)))
h5case("strings", lambda f: (f.create_dataset("inputs", data=np.array([b"ab"] * N)), f.create_dataset("targets", data=t)))
h5case("compressed", lambda f: (f.create_dataset("inputs", data=x, compression="gzip"), f.create_dataset("targets", data=t)))
h5case("unwritten", lambda f: (f.create_dataset("inputs", shape=(100000, 100)), f.create_dataset("targets", data=t)))
h5case("group_missing", lambda f: f.create_group("inputs"))
h5case("empty_dims", lambda f: (f.create_dataset("inputs", shape=(0, 4)), f.create_dataset("targets", shape=(0,))))
out("hdf5data", "truncated", b"\0" + good[: len(good) // 2])
out("hdf5data", "flipped", b"\0" + flip(good, len(good) // 3))
out("hdf5data", "garbage", b"\0" + b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 4)

# binmodel, format version 3 (src/net/netiobinary.c): the version-2 seed model_ok.petnet (a Net saved by NetSave())
# with the normalisation block (PetscInt normset, PetscReal scale, mean, std) inserted after the 10-integer header
v2 = open("fuzz/corpus/binmodel/model_ok.petnet", "rb").read()
assert v2[:8] == b"PNET\0\0\0\2", "model_ok.petnet is not the version-2 seed"


def v3(normset=1, norm=(1 / 255, 0.286, 0.353), flag_raw=None):
    head = v2[:4] + struct.pack(">i", 3) + v2[8:40]
    block = (flag_raw if flag_raw is not None else struct.pack(">i", normset)) + struct.pack(">3d", *norm)
    return head + block + v2[40:]


ok3 = v3()
out("binmodel", "v3_ok.petnet", ok3)
out("binmodel", "v3_unset.petnet", v3(normset=0, norm=(1, 0, 1)))
out("binmodel", "v3_flag_bad.petnet", v3(flag_raw=struct.pack(">i", 7)))
out("binmodel", "v3_std_zero.petnet", v3(norm=(1, 0, 0)))
out("binmodel", "v3_std_negative.petnet", v3(norm=(1, 0, -1)))
out("binmodel", "v3_mean_nan.petnet", v3(norm=(1, float("nan"), 1)))
out("binmodel", "v3_scale_inf.petnet", v3(norm=(float("inf"), 0, 1)))
out("binmodel", "v3_truncated_50.petnet", ok3[:50])
out("binmodel", "v3_truncated_68.petnet", ok3[:68])
out("binmodel", "v3_as_v2.petnet", v2[:4] + struct.pack(">i", 2) + ok3[8:])  # a version-3 body read as version 2

# h5model, format version 3: "conv2d:2:3:1:1,batchnorm,relu,flatten,dense:3" on 4x4x2, every tensor in PyTorch's shape
# with its crc32, batchnorm's num_batches_tracked an int64 scalar (what NetSave() writes), then damaged variants
def crc32(values):
    return np.bytes_(f"{zlib.crc32(np.ascontiguousarray(values, dtype='<f8').tobytes()) & 0xffffffff:08x}")


rng = np.random.default_rng(3)
V3 = {"0.weight": rng.standard_normal((2, 2, 3, 3)), "0.bias": rng.standard_normal(2), "1.weight": 1 + rng.random(2), "1.bias": rng.random(2),
      "1.running_mean": rng.random(2), "1.running_var": 1 + rng.random(2), "1.num_batches_tracked": np.int64(7),
      "4.weight": rng.standard_normal((3, 32)), "4.bias": rng.standard_normal(3)}


def v3case(fname, tensors=V3, edit=None, version=3):
    buf = io.BytesIO()
    with h5py.File(buf, "w", libver="earliest") as f:
        g = f.create_group("petnet")
        g.attrs["version"] = np.int32(version)
        g.attrs["spec"] = np.bytes_("conv2d:2:3:1:1,batchnorm,relu,flatten,dense:3")
        g.attrs["input_shape"] = np.bytes_("4x4x2")
        g.attrs["nparams"] = np.int32(36 + 2 + 4 + 96 + 3)
        g.attrs["nbuffers"] = np.int32(4)
        for k, v in tensors.items():
            d = f.create_dataset(k, data=v)
            if np.ndim(v):
                d.attrs["shape"] = np.bytes_(",".join(str(n) for n in np.shape(v)))
            d.attrs["crc32"] = crc32(v)
        if edit:
            edit(f)
    out("h5model", fname, buf.getvalue())
    return buf.getvalue()


def changed(**kw):
    t = dict(V3)
    for k, v in kw.items():
        t[k.replace("_", ".", 1)] = v
    return t


good3 = v3case("v3_ok.h5")
v3case("v3_no_count.h5", {k: v for k, v in V3.items() if "num_batches" not in k})
v3case("v3_flat_weight.h5", changed(**{"0_weight": V3["0.weight"].reshape(-1)}))  # version 2's layout in a version-3 file
v3case("v3_conv_hwc.h5", changed(**{"0_weight": V3["0.weight"].transpose(0, 2, 3, 1).copy()}))  # PetNet's own order
v3case("v3_dense_transposed.h5", changed(**{"4_weight": V3["4.weight"].T.copy()}))
v3case("v3_count_float.h5", changed(**{"1_num_batches_tracked": np.float64(7)}))
v3case("v3_count_negative.h5", changed(**{"1_num_batches_tracked": np.int64(-1)}))
v3case("v3_count_array.h5", changed(**{"1_num_batches_tracked": np.arange(3)}))
v3case("v3_count_int8.h5", changed(**{"1_num_batches_tracked": np.int8(7)}))
v3case("v3_float32.h5", changed(**{"4_weight": V3["4.weight"].astype(np.float32)}))
v3case("v3_version2.h5", version=2)  # version 2 with 4-D tensors: refused as not flat


def huge(f):  # an extent of 2^40 x 2^40 that stores nothing: refused on its dims, before HDF5 is asked about storage
    del f["4.weight"]
    f.create_dataset("4.weight", shape=(2**40, 2**40), dtype="<f8", chunks=(1, 1))


v3case("v3_huge_extent.h5", edit=huge)
out("h5model", "v3_truncated.h5", good3[: len(good3) * 2 // 3])
out("h5model", "v3_flipped.h5", flip(good3, len(good3) // 2))

# format version 4: the header's checksum (NetIOHeaderChecksum_Private(), src/net/netio.c) and the grid; seeds with one
# header field flipped and the checksum left as written (the reader must refuse each as corrupt, naming the file)
def header_crc(spec, shape, nparams, nbuffers, norm=None, grid=0):
    raw = spec.encode() + b"\0" + shape.encode() + b"\0" + struct.pack("<qqqB", nparams, nbuffers, grid, norm is not None)
    return zlib.crc32(raw + (struct.pack("<3d", *norm) if norm is not None else b"")) & 0xffffffff


speclen, ndim = struct.unpack(">ii", v2[8:16])
dims = struct.unpack(">4i", v2[16:32])[:ndim]
nparams2, nbuffers2 = struct.unpack(">ii", v2[32:40])
spec2 = v2[40 : 40 + speclen].decode()
NORM = (1 / 255, 0.286, 0.353)


def v4(edit_block=None, spec=spec2, crc_spec=spec2, grid=0):
    crc = header_crc(crc_spec, "x".join(str(d) for d in dims), nparams2, nbuffers2, NORM, 0)
    block = struct.pack(">i", 1) + struct.pack(">3d", *NORM)
    if edit_block:
        block = edit_block(block)
    head = v2[:4] + struct.pack(">ii", 4, len(spec)) + v2[12:40]
    return head + block + struct.pack(">iI", grid, crc) + spec.encode() + v2[40 + speclen :]


ok4 = v4()
out("binmodel", "v4_ok.petnet", ok4)
out("binmodel", "v4_mean_flip.petnet", v4(edit_block=lambda b: b[:4 + 8 + 5] + bytes([b[4 + 8 + 5] ^ 0x02]) + b[4 + 8 + 6 :]))
out("binmodel", "v4_spec_flip.petnet", v4(spec=spec2.replace("relu", "tanh") if "relu" in spec2 else spec2[:-1] + "9"))
out("binmodel", "v4_grid_flip.petnet", v4(grid=2))
out("binmodel", "v4_crc_flip.petnet", flip(ok4, 40 + 28 + 4 + 2, 0x01))
out("binmodel", "v4_truncated_70.petnet", ok4[:70])

SPEC3, SHAPE3, NP3, NB3 = "conv2d:2:3:1:1,batchnorm,relu,flatten,dense:3", "4x4x2", 36 + 2 + 4 + 96 + 3, 4


def v4h5(f, spec=SPEC3, grid=0, crc=None):
    g = f["petnet"]
    g.attrs["grid"] = np.int32(grid)
    g.attrs["header_crc32"] = np.bytes_(f"{header_crc(SPEC3, SHAPE3, NP3, NB3) if crc is None else crc:08x}")
    if spec != SPEC3:
        del g.attrs["spec"]
        g.attrs["spec"] = np.bytes_(spec)


v3case("v4_ok.h5", edit=v4h5, version=4)
v3case("v4_spec_flip.h5", edit=lambda f: v4h5(f, spec=SPEC3.replace("relu", "tanh")), version=4)
v3case("v4_grid_flip.h5", edit=lambda f: v4h5(f, grid=2), version=4)
v3case("v4_no_crc.h5", edit=lambda f: (v4h5(f), f["petnet"].attrs.__delitem__("header_crc32")), version=4)
v3case("v4_var_negative.h5", changed(**{"1_running_var": -V3["1.running_var"]}), edit=v4h5, version=4)
