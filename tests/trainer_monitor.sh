#!/bin/bash
# Trainer monitors and plot (suite line trainer_monitor_files), on 500 + 200 Fashion-MNIST samples, 2 ranks:
#   1. -trainer_monitor ascii,csv:FILE,ascii:FILE2 -trainer_monitor_plot PNG -trainer_view: stdout keeps the progress
#      lines, FILE2 holds the same lines, FILE a header and one row per epoch whose last row equals the summary line's
#      losses and accuracy, the PNG is a valid PNG of 900x360 pixels and 5-100 KB, -trainer_view shows the final state;
#   2. full batch (lmvm, 3 epochs) with PETSc's spelling ascii:FILE:ascii_csv: one row per TAO iteration.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/monitorfiles
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
run="bin/fashion -net_layers dense:10 -train_dataset_limit 500 -test_dataset_limit 200 -malloc_debug -malloc_dump"

mpiexec -n 2 $run -trainer_epochs 3 -trainer_monitor ascii,csv:$out.csv,ascii:$out.txt -trainer_monitor_plot $out.png -trainer_view > $out.log 2>&1 || { cat $out.log; fail "training failed"; }
python3 - "$out" <<'PY' || exit 1
import csv, re, struct, sys
out = sys.argv[1]
log = open(out + ".log").read()
summary = dict(kv.split("=") for kv in re.search(r"^summary: (.*)$", log, re.M).group(1).split())
lines = [l for l in log.splitlines() if l.startswith("epoch ")]
assert len(lines) == 3, f"stdout has {len(lines)} progress lines, not 3"
assert open(out + ".txt").read().splitlines() == lines, "ascii:FILE differs from the progress lines on stdout"
rows = list(csv.DictReader(open(out + ".csv")))
assert [int(r["epoch"]) for r in rows] == [1, 2, 3], f"csv epochs {[r['epoch'] for r in rows]}"
for key, col in (("train_loss", "train_loss"), ("test_loss", "test_loss"), ("test_accuracy", "test_accuracy")):
    assert abs(float(rows[-1][col]) - float(summary[key])) <= 0.6 * 10 ** -len(summary[key].split(".")[1]), f"csv {col} {rows[-1][col]} != summary {summary[key]}"
for r, l in zip(rows, lines):  # each row agrees with its progress line
    assert f"train_loss {float(r['train_loss']):.6f}" in l and f"test_acc {float(r['test_accuracy']):.4f}" in l, (r, l)
    assert float(r["learning_rate"]) == 1e-3 and float(r["samples_per_s"]) > 0 and float(r["epoch_time_s"]) > 0
m = re.search(r"trained: 3 epochs completed.*\n\s*final train_loss (\S+)\s+test_loss (\S+)\s+test_acc (\S+)", log)
assert m, "-trainer_view does not show the final state"
assert (m.group(1), m.group(2), m.group(3)) == (summary["train_loss"], summary["test_loss"], summary["test_accuracy"]), m.groups()
assert "total number of iterations" in log.split("trained:")[1], "-trainer_view lacks TAO's state"
png = open(out + ".png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", png[16:24])
assert (w, h) == (900, 360) and 5000 < len(png) < 100000, f"PNG {w}x{h}, {len(png)} bytes"
print(f"ascii, csv ({len(rows)} rows) and -trainer_view agree with the summary; PNG {w}x{h}, {len(png)} bytes")
PY

mpiexec -n 1 $run -tao_type lmvm -trainer_epochs 3 -trainer_monitor ascii:$out.lmvm.csv:ascii_csv > $out.lmvm.log 2>&1 || { cat $out.lmvm.log; fail "full-batch training failed"; }
grep -q "^epoch " $out.lmvm.log && fail "the CSV monitor alone also printed progress lines"
its=$(sed -n 's/.*tao_iterations=\([0-9]*\).*/\1/p' $out.lmvm.log)
rows=$(($(wc -l < $out.lmvm.csv) - 1))
[[ -n "$its" && "$rows" == "$its" ]] || fail "full batch: $rows CSV rows for $its TAO iterations"
head -1 $out.lmvm.csv | grep -qx "epoch,train_loss,test_loss,test_accuracy,learning_rate,epoch_time_s,elapsed_s,samples_per_s" || fail "bad CSV header"
echo "full batch: $rows CSV rows = $its TAO iterations"
