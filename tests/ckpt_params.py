#!/usr/bin/env python3
"""The parameters stored in a PetNet training checkpoint (format 5 or 6, layout at the top of src/trainer/checkpoint.c).
Usage: ckpt_params.py A B [RTOL]: compares the parameters of two checkpoints, prints the epoch of each and the largest
difference relative to the largest parameter; exits 1 when it exceeds RTOL (default 0: the same bits)."""
import struct, sys


def params(path):
    b = open(path, 'rb').read()
    h = struct.unpack('>12i', b[:48])
    assert h[0] == 0x504e4350 and h[1] in (5, 6), f"{path}: not a format-5 or 6 PetNet checkpoint (header {h[:2]})"
    head = 60 if h[1] >= 6 else 48  # format 6: 3 more integers, the K-FAC section's lengths
    off = head + h[7] + 3 * 8 + 2 * 4 + h[8] * (2 * 4 + 7 * 8) + h[9] * 4 + h[10] * 8 + h[11]
    classid, n = struct.unpack('>ii', b[off:off + 8])
    assert n == h[5], f"{path}: {n} parameters where the header says {h[5]}"
    return h[2], b[off + 8:off + 8 + 8 * n], struct.unpack(f'>{n}d', b[off + 8:off + 8 + 8 * n])


def main():
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    ea, ba, a = params(sys.argv[1])
    eb, bb, b = params(sys.argv[2])
    if ea != eb or len(a) != len(b):
        print(f"FAIL: epoch {ea} with {len(a)} parameters against epoch {eb} with {len(b)}")
        return 1
    scale = max(abs(x) for x in a) or 1.0
    d = max(abs(x - y) for x, y in zip(a, b)) / scale
    same = ba == bb
    print(f"epoch {ea}, {len(a)} parameters: {'the same bits' if same else f'max relative difference {d:.3e}'} (tolerance {rtol:g})")
    return 0 if (same if rtol == 0 else d <= rtol) else 1


if __name__ == '__main__':
    sys.exit(main())
