#!/usr/bin/python3
"""Communication volume per training step of an MLP in each parallel mode of the Net, on paper.

Bytes sent from one rank to another per step (forward, loss, backward, gradient reduction, optimizer update), summed
over the ranks, with the convention of bin/bench_parallel (bench/bench_parallel.c): a point-to-point message counts its
bytes when it goes to another rank; an all-reduce of n bytes counts 2 (p-1) n, an allgather of blocks c_r counts
(p-1) sum c_r, a reduce-scatter (p-1) sum c_r. Scalars are 8 bytes (PetscScalar double), p ranks, batch B, dense layers
F_0 -> F_1 -> ... -> F_L (relu between them moves nothing), P = sum_k (F_{k-1} F_k + F_k) parameters.

  replicated  the parameter broadcast theta -> a full copy per rank and the sum-reduce of the gradient copies
              (PetscSF, each entry from/to its owner):                 2 (p-1) 8 P
  sharded     ZeRO-3: each node's parameters gathered to every rank before it runs forward, gathered again for
              backward but for the first dense node (its input needs no cotangent and its weight gradient does not
              read the weights) (--no-regather: kept from forward), its gradient reduce-scattered to the owners:
                                                                       (p-1) 8 (3P - P_1)   (2 (p-1) 8 P without the regather)
  model       each dense node split over a P_out x P_in grid of all p ranks (rank = i P_in + j holds W[out block i]
              [in block j], and b[out block i] when j = 0); activations stay split by samples between nodes
              (rank r holds n_r of the B samples). Per dense node with F_in -> F_out:
                input broadcast  x[B][in block j] to every rank of column j:  sum_r (B - n_r) F_in_j(r)
                                 (= (p-1) B F_in / P_in for even splits)
                output sum-reduce of the partial y[B][out block i] to the samples' owners: sum_r (B - n_r) F_out_i(r)
                                 (= (p-1) B F_out / P_out)
                backward: the adjoints, the same bytes (dy broadcast, dx sum-reduce; no dx for the first node, whose
                          input needs no cotangent)
                parameters: each rank gathers its block from the canonical theta (split over the ranks like
                          PETSC_DECIDE) and sum-reduces its block's gradient back; only entries the rank does not own
                          move: G_k = sum_r |block_r \\ own_r|; 2 x 8 G_k, or 3 x 8 G_k with --regather (gathered
                          again for backward), but 2 x 8 G_1 for the first node (as in sharded mode, its backward
                          does not gather its block: no input cotangent, and its weight gradient does not read the
                          weights); 0 with --aligned (theta laid out so that each rank owns its blocks)
  sharded with --split J:PxQ (sharded x model parallel: bin/bench_parallel -bench_mode sharded -bench_partition PxQ,
              which splits node layer2, the second dense node, J = 1): dense node J moves as a model-parallel node
              (its activations, 3 x 8 G_J, or 2 x 8 G_J if it is the first), the others as in sharded mode
  tensor      -net_parallel tensor on MLP pairs of dense:F:tokens, an activation, dense:E:tokens (--layers E,F,E[,F,E...],
              --tokens T positions a sample; rank r holds n_r samples, n_r T rows): the first dense of a pair
              column-parallel (grid p x 1), the second row-parallel (1 x p). Per pair, with the column block kept
              between the two (the default; --no-keep: gathered back to the sample split and redistributed, as before
              2026-11-29):
                input broadcast of the column node, all rows of the group to every rank:  sum_r (B - n_r) T E
                                 (forward; backward its adjoint for every pair but the first, whose input is the Net's)
                output sum-reduce of the row node's partial products:  sum_r (B - n_r) T E, forward and backward
                --no-keep adds 2 x 2 sum_r (B - n_r) T F_block(r) (the column node's output gathered and the row
                node's input redistributed, forward and backward)
                parameters: each split node's block as in model mode (G_k with its own grid, over the ownership of
                all parameters, the tail's included): 2 x 8 G for the first node, 3 x 8 G for the others
              --tail F_in,F_out: a plain dense after the pairs (bin/bench_parallel's flatten,dense:10), sharded:
                allgather forward and backward and the gradient's reduce-scatter, 3 (p-1) 8 (F_in F_out + F_out)
  every mode  the scalar all-reductions of a step (--control bytes, default 32: the loss's layout check, 2 4-byte
              ints; the loss sum and its count of labels, 16; TAO's gradient norm, 8):          2 (p-1) control

Usage: parallel_volume.py [--layers 784,8192,8192,10] [--batch 256] [--ranks 1,2,4,1024] [--modes replicated,sharded,model,tensor]
                          [--tokens T] [--no-keep] [--tail F_in,F_out] (tensor mode)
                          [--grid PoutxPin (default px1)] [--regather] [--no-regather] [--control 32]
                          [--aligned] [--split J:PoutxPin] [--value] (print only the bytes of the single mode and
                          rank count given)
"""
import argparse
import sys

SCALAR = 8


def split(n, parts):
    """PETSC_DECIDE: sizes of n entries over parts, the first n % parts getting one more"""
    return [n // parts + (1 if r < n % parts else 0) for r in range(parts)]


def starts(sizes):
    out, s = [], 0
    for n in sizes:
        out.append(s)
        s += n
    return out


def overlap(lo, hi, a, b):
    return max(0, min(hi, b) - max(lo, a))


def rows_overlap(base, stride, a, length, o0, o1, lo, hi):
    """entries of the runs [base + o stride + a, ... + length), o in [o0, o1), inside [lo, hi)"""
    if length <= 0 or o1 <= o0:
        return 0
    total = 0
    # rows entirely inside [lo, hi): base + o stride + a >= lo and base + o stride + a + length <= hi
    first = max(o0, -(-(lo - base - a) // stride))
    last = min(o1 - 1, (hi - base - a - length) // stride)
    if last >= first:
        total += (last - first + 1) * length
        partial = [o for o in (first - 1, last + 1) if o0 <= o < o1]
    else:
        # no row is inside: only rows crossing lo or hi can overlap, at most two (a run is shorter than the stride)
        partial = set()
        for edge in (lo, hi):
            o = (edge - base - a) // stride
            for c in (o - 1, o, o + 1):
                if o0 <= c < o1:
                    partial.add(c)
    for o in partial:
        s = base + o * stride + a
        total += overlap(lo, hi, s, s + length)
    return total


def model_parameter_traffic(layers, p, grid, extra=0):
    """per dense node, the sum over ranks of the block entries the rank does not own in theta (grid: one (P_out,
    P_in) for all nodes, or a list of one per node; extra: parameters after these nodes, owned by the ranks too)"""
    sizes = [layers[k] * layers[k + 1] + layers[k + 1] for k in range(len(layers) - 1)]
    P = sum(sizes) + extra
    own = split(P, p)
    ownstart = starts(own)
    moved = []
    poff = 0
    for k in range(len(layers) - 1):
        pout, pin = grid[k] if isinstance(grid, list) else grid
        moved.append(0)
        fin, fout = layers[k], layers[k + 1]
        outs, ins = split(fout, pout), split(fin, pin)
        outst, inst = starts(outs), starts(ins)
        for i in range(pout):
            for j in range(pin):
                r = i * pin + j
                lo, hi = ownstart[r], ownstart[r] + own[r]
                block = outs[i] * ins[j] + (outs[i] if j == 0 else 0)
                mine = rows_overlap(poff, fin, inst[j], ins[j], outst[i], outst[i] + outs[i], lo, hi)
                if j == 0:
                    b0 = poff + fin * fout + outst[i]
                    mine += overlap(lo, hi, b0, b0 + outs[i])
                moved[k] += block - mine
        poff += sizes[k]
    return moved


def model_activations(layers, k, B, p, pout, pin):
    """bytes of dense node k's input broadcast and output sum-reduce, forward and backward (no dx for the first)"""
    n = split(B, p)
    fin, fout = layers[k], layers[k + 1]
    ins, outs = split(fin, pin), split(fout, pout)
    xin = sum((B - n[i * pin + j]) * ins[j] for i in range(pout) for j in range(pin))
    yout = sum((B - n[i * pin + j]) * outs[i] for i in range(pout) for j in range(pin))
    return SCALAR * (xin * (2 if k > 0 else 1) + 2 * yout)


def tensor_volume(layers, B, p, T, keep, tail, parts):
    """-net_parallel tensor on MLP pairs E,F,E,... of T positions a sample, and a sharded dense tail (F_in, F_out)"""
    if len(layers) < 3 or len(layers) % 2 == 0:
        sys.exit('--mode tensor needs --layers E,F,E[,F,E...]: MLP pairs')
    n = split(B, p)
    ptail = tail[0] * tail[1] + tail[1] if tail else 0
    grids = [(p, 1) if k % 2 == 0 else (1, p) for k in range(len(layers) - 1)]
    acts = 0
    for k in range(0, len(layers) - 1, 2):
        E, F = layers[k], layers[k + 1]
        rows = sum((B - n[r]) * T for r in range(p))
        acts += rows * E * (1 if k == 0 else 2)  # the column node's input broadcast (and its adjoint)
        acts += 2 * rows * layers[k + 2]  # the row node's sum-reduce and its adjoint
        if not keep:  # the column block gathered to the sample split and redistributed, forward and backward
            fb = split(F, p)
            acts += 2 * 2 * sum((B - n[r]) * T * fb[r] for r in range(p))
    parts['activations'] = SCALAR * acts
    G = model_parameter_traffic(layers, p, grids, ptail)
    parts['parameter blocks'] = SCALAR * (3 * sum(G) - G[0])
    if tail:
        parts['tail allgather forward, backward, reduce-scatter'] = 3 * (p - 1) * SCALAR * ptail
    return sum(parts.values()), parts


def volume(mode, layers, B, p, grid, regather, control, aligned=False, split_node=None, tokens=1, keep=True, tail=None):
    """bytes per step and their parts"""
    P = sum(layers[k] * layers[k + 1] + layers[k + 1] for k in range(len(layers) - 1))
    parts = {'control': 2 * (p - 1) * control}
    if mode == 'tensor':
        return tensor_volume(layers, B, p, tokens, keep, tail, parts)
    if mode == 'sharded' and split_node:
        j, (pout, pin) = split_node
        sizes = [layers[k] * layers[k + 1] + layers[k + 1] for k in range(len(layers) - 1)]
        if pout * pin != p or not 0 <= j < len(sizes):
            sys.exit(f'--split {j}:{pout}x{pin}: dense node {j} on a grid of {p} ranks')
        rest = P - sizes[j]
        first = sizes[0] if j != 0 else 0
        parts['allgather forward'] = (p - 1) * SCALAR * rest
        if regather:
            parts['allgather backward'] = (p - 1) * SCALAR * (rest - first)
        parts['reduce-scatter gradient'] = (p - 1) * SCALAR * rest
        parts['activations'] = model_activations(layers, j, B, p, pout, pin)
        G = model_parameter_traffic(layers, p, (pout, pin))[j]
        parts['parameter blocks'] = SCALAR * ((3 if regather and j > 0 else 2) * G)
        return sum(parts.values()), parts
    if mode == 'replicated':
        parts['broadcast theta'] = (p - 1) * SCALAR * P
        parts['sum-reduce gradient'] = (p - 1) * SCALAR * P
    elif mode == 'sharded':
        parts['allgather forward'] = (p - 1) * SCALAR * P
        if regather:  # the first dense node is not gathered again: its input needs no cotangent, and a dense
            # node's weight gradient does not read the weights (Layer.gradfree), so backward does not gather them
            parts['allgather backward'] = (p - 1) * SCALAR * (P - (layers[0] * layers[1] + layers[1]))
        parts['reduce-scatter gradient'] = (p - 1) * SCALAR * P
    elif mode == 'model':
        pout, pin = grid if grid else (p, 1)
        if pout * pin != p:
            sys.exit(f'grid {pout}x{pin} does not have {p} ranks')
        parts['activations'] = sum(model_activations(layers, k, B, p, pout, pin) for k in range(len(layers) - 1))
        # (the ranks agree on their sample counts once per batch layout, not per step: an allgather of two 4-byte
        # integers per rank when the layout changes, none in steps of the same batch size)
        G = [0] * (len(layers) - 1) if aligned else model_parameter_traffic(layers, p, (pout, pin))
        parts['parameter blocks'] = SCALAR * ((3 * sum(G) - G[0]) if regather else 2 * sum(G))
    else:
        sys.exit(f'unknown mode {mode}: replicated, sharded, model or tensor')
    return sum(parts.values()), parts


def human(b):
    for unit, f in (('TB', 1e12), ('GB', 1e9), ('MB', 1e6), ('kB', 1e3)):
        if b >= f:
            return f'{b / f:.3g} {unit}'
    return f'{b:.0f} B'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--layers', default='784,8192,8192,10')
    ap.add_argument('--batch', type=int, default=256)
    ap.add_argument('--ranks', default='1,2,4,1024')
    ap.add_argument('--modes', '--mode', default='replicated,sharded,model')
    ap.add_argument('--grid', default=None, help='PoutxPin for the model mode (default: p x 1)')
    ap.add_argument('--regather', dest='regather', action='store_true', default=True)
    ap.add_argument('--no-regather', dest='regather', action='store_false')
    ap.add_argument('--control', type=int, default=32)
    ap.add_argument('--aligned', action='store_true', help='model mode: theta owned by the ranks along their blocks')
    ap.add_argument('--split', default=None, help='J:PoutxPin: sharded mode with dense node J model parallel')
    ap.add_argument('--tokens', type=int, default=1, help='tensor mode: positions T of a sample')
    ap.add_argument('--no-keep', dest='keep', action='store_false', default=True, help='tensor mode: gather the column block')
    ap.add_argument('--tail', default=None, help='tensor mode: F_in,F_out of a sharded dense after the pairs')
    ap.add_argument('--value', action='store_true')
    a = ap.parse_args()
    layers = [int(x) for x in a.layers.split(',')]
    ranks = [int(x) for x in a.ranks.split(',')]
    modes = a.modes.split(',')
    grid = tuple(int(x) for x in a.grid.split('x')) if a.grid else None
    split_node = None
    if a.split:
        j, g = a.split.split(':')
        split_node = (int(j), tuple(int(x) for x in g.split('x')))
    tail = tuple(int(x) for x in a.tail.split(',')) if a.tail else None
    P = sum(layers[k] * layers[k + 1] + layers[k + 1] for k in range(len(layers) - 1))
    if a.value:
        if len(ranks) != 1 or len(modes) != 1:
            sys.exit('--value needs one mode and one rank count')
        print(volume(modes[0], layers, a.batch, ranks[0], grid, a.regather, a.control, a.aligned, split_node, a.tokens, a.keep, tail)[0])
        return
    print(f'MLP {"-".join(map(str, layers))}, P = {P} parameters ({human(SCALAR * P)}), batch B = {a.batch}, '
          f'regather = {a.regather}, control = {a.control} bytes')
    for p in ranks:
        for mode in modes:
            total, parts = volume(mode, layers, a.batch, p, grid, a.regather, a.control, a.aligned, split_node, a.tokens, a.keep, tail)
            detail = ', '.join(f'{k} {v}' for k, v in parts.items() if v)
            g = f' grid {grid[0]}x{grid[1]}' if mode == 'model' and grid else (f' grid {p}x1' if mode == 'model' else '')
            print(f'p={p:<5d} {mode:<10s} bytes_per_step={total:<16d} ({human(total)}; per rank {human(total / p)}){g}'
                  f'{": " + detail if detail else ""}')


if __name__ == '__main__':
    main()
