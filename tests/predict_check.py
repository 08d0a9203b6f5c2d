#!/usr/bin/python3
"""Checks of bin/predict (tests/predict.suite), with h5py and numpy.

  predict_check.py data OUT.h5 N
      writes the first N images of Fashion-MNIST's t10k split as an HDF5 dataset for DATASETHDF5: "inputs" [N][784]
      float64 with the raw byte values 0..255 (not normalised) and "targets" [N] the labels; and OUT_inputs.h5 with
      the same "inputs" only (for -predict_dataset_hdf5_targets none).
  predict_check.py check DIR
      reads, under DIR (tests/out), the outputs of the suite's tests and checks:
      - predict_h5_1.h5: "logits" [N][10] float64 and "labels" [N] integers, labels = arg-max of the logits;
      - predict_csv_2.csv (2 ranks): header, N lines "index,label,logits...", indices 0..N-1, labels = arg-max, the
        same labels as the HDF5 file and logits equal to 1e-12;
      - the accuracy recomputed from the labels and the true t10k labels equals the summary's test_accuracy, and the
        summary lines of predict_h5_1, predict_csv_2 and the training run predict_train_1 give the same test_loss and
        test_accuracy (exactly, as printed);
      - predict_hdf5data_2.h5 (an HDF5 dataset of raw bytes, normalised by the model's recorded 1/255): its logits equal
        the first rows of predict_h5_1.h5 to 1e-12;
      - predict_inputsonly_2.h5 (the same inputs without targets): the same logits and labels, and a summary line
        without test_loss and test_accuracy.
"""
import gzip, sys
import h5py
import numpy as np

FASHION = '/usr/share/datasets/fashion-mnist'


def idx(name):
    with gzip.open(f'{FASHION}/{name}', 'rb') as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], 'big') for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def summary(path):
    line = [l for l in open(path) if l.startswith('summary:')][-1]
    return dict(kv.split('=', 1) for kv in line.split()[1:] if '=' in kv)


def fail(msg):
    print('FAILED: ' + msg)
    sys.exit(1)


def main():
    if sys.argv[1] in ('data', 'data01'):  # data01: the images as floats in [0, 1], not raw bytes
        out, n = sys.argv[2], int(sys.argv[3])
        x = idx('t10k-images-idx3-ubyte.gz')[:n].reshape(n, -1).astype(np.float64)
        if sys.argv[1] == 'data01':
            x /= 255
        y = idx('t10k-labels-idx1-ubyte.gz')[:n].astype(np.float64)
        with h5py.File(out, 'w') as f:
            f['inputs'] = x
            f['targets'] = y
        with h5py.File(out.replace('.h5', '_inputs.h5'), 'w') as f:
            f['inputs'] = x
        print(f'wrote {out}: inputs {x.shape}, targets {y.shape}; and the inputs alone')
        return
    d = sys.argv[2]
    s1, s2, st = summary(f'{d}/predict_h5_1.out'), summary(f'{d}/predict_csv_2.out'), summary(f'{d}/predict_train_1.out')
    n = int(s1['samples'])
    with h5py.File(f'{d}/predict_h5_1.h5', 'r') as f:
        logits, labels = f['logits'][:], f['labels'][:]
    if logits.shape != (n, 10) or labels.shape != (n,) or logits.dtype != np.float64 or labels.dtype.kind != 'i':
        fail(f'HDF5 shapes/types: logits {logits.shape} {logits.dtype}, labels {labels.shape} {labels.dtype}, expected ({n}, 10) float64 and ({n},) int')
    if not (labels == logits.argmax(axis=1)).all():
        fail('HDF5: labels are not the arg-max of the logits')
    lines = open(f'{d}/predict_csv_2.csv').read().splitlines()
    if lines[0] != 'index,label,' + ','.join(f'logit_{k}' for k in range(10)):
        fail(f'CSV header: {lines[0]}')
    csv = np.array([[float(v) for v in l.split(',')] for l in lines[1:]])
    if csv.shape != (n, 12):
        fail(f'CSV: {csv.shape[0]} lines of {csv.shape[1]} values, expected {n} of 12')
    if not (csv[:, 0] == np.arange(n)).all() or not (csv[:, 1] == csv[:, 2:].argmax(axis=1)).all():
        fail('CSV: indices are not 0..N-1 or labels not the arg-max of the logits')
    if not (csv[:, 1] == labels).all():
        fail('CSV (2 ranks) and HDF5 (1 rank) labels differ')
    diff = np.abs(csv[:, 2:] - logits).max()
    if diff > 1e-12:
        fail(f'CSV (2 ranks) and HDF5 (1 rank) logits differ by {diff}')
    truth = idx('t10k-labels-idx1-ubyte.gz')[:n]
    acc = (labels == truth).mean()
    if f'{acc:.4f}' != s1['test_accuracy']:
        fail(f'recomputed accuracy {acc:.4f} != summary {s1["test_accuracy"]}')
    for key in ('test_loss', 'test_accuracy'):
        if not (s1[key] == s2[key] == st[key]):
            fail(f'{key}: predict 1 rank {s1[key]}, predict 2 ranks {s2[key]}, training run {st[key]}')
    with h5py.File(f'{d}/predict_hdf5data_2.h5', 'r') as f:
        other = f['logits'][:]
    diff = np.abs(other - logits[:other.shape[0]]).max()
    if diff > 1e-12:
        fail(f'an HDF5 dataset of raw bytes, normalised by the model, gives logits that differ by {diff} from the idx run')
    with h5py.File(f'{d}/predict_inputsonly_2.h5', 'r') as f:
        bare, barelabels = f['logits'][:], f['labels'][:]
    if bare.shape != other.shape or np.abs(bare - other).max() > 1e-12 or not (barelabels == other.argmax(axis=1)).all():
        fail('a file of inputs only (-predict_dataset_hdf5_targets none) gives other logits or labels than the same inputs with targets')
    sb = summary(f'{d}/predict_inputsonly_2.out')
    if 'test_loss' in sb or 'test_accuracy' in sb or int(sb['samples']) != other.shape[0]:
        fail(f'the summary of a prediction without targets: {sb}')
    print(f'summary: samples={n} accuracy={acc:.4f} csv_h5_max_diff={np.abs(csv[:, 2:] - logits).max():.3g} hdf5data_rows={other.shape[0]} ok=1')


if __name__ == '__main__':
    main()
