#!/bin/bash
# A restart monitors and plots the epochs before it too (suite line trainer_restart_history; checkpoint format 4 holds
# every epoch's metrics). On 300 + 100 Fashion-MNIST samples, on the ranks given as the argument (default 1):
#   A  3 epochs uninterrupted, csv:A.csv;
#   B  2 epochs with a checkpoint, then -trainer_restart to 3 epochs with ascii,csv:B.csv and -trainer_monitor_plot,
#      gnuplot wrapped so that the plotted data are kept: B.csv has the rows of epochs 1, 2, 3 and each equals A's
#      (training loss, test loss, accuracy: the restart continues the run exactly), the progress lines of epochs 1, 2
#      end in "(restored)", and the plot's data block holds the 3 epochs with A's losses;
#   C  a restart from B's final checkpoint with -trainer_epochs 3 (evaluation only): the plot holds epochs 1, 2, 3 once.
# Before format 4, B.csv held epoch 3 alone and the plot one point.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
nranks=${1:-1}
out=tests/out/restart_history_$nranks
mkdir -p tests/out && rm -f $out.*
fail() { echo "FAIL: $*"; exit 1; }
run="mpiexec -n $nranks bin/fashion -net_layers dense:10 -train_dataset_limit 300 -test_dataset_limit 100 -malloc_debug -malloc_dump"
cat > $out.gnuplot <<GP
#!/bin/sh
[ "\$1" = --version ] && exec gnuplot --version
tee \$PETNET_PLOT_DATA | gnuplot
GP
chmod +x $out.gnuplot
plot="-trainer_monitor_plot $out.png -trainer_monitor_plot_gnuplot $out.gnuplot"

$run -trainer_epochs 3 -trainer_monitor csv:$out.A.csv > $out.A.log 2>&1 || { cat $out.A.log; fail "run A failed"; }
$run -trainer_epochs 2 -trainer_monitor 0 -trainer_checkpoint $out.ckpt > $out.B1.log 2>&1 || { cat $out.B1.log; fail "run B (first part) failed"; }
PETNET_PLOT_DATA=$out.B.gp $run -trainer_epochs 3 -trainer_restart $out.ckpt -trainer_checkpoint $out.ckpt -trainer_monitor ascii,csv:$out.B.csv $plot > $out.B.log 2>&1 || { cat $out.B.log; fail "the restart failed"; }
PETNET_PLOT_DATA=$out.C.gp $run -trainer_epochs 3 -trainer_restart $out.ckpt -trainer_monitor csv:$out.C.csv $plot > $out.C.log 2>&1 || { cat $out.C.log; fail "the restart from the final checkpoint failed"; }
python3 - "$out" "$nranks" <<'PY' || exit 1
import csv, re, sys
out = sys.argv[1]
cols = ("train_loss", "test_loss", "test_accuracy")
A = list(csv.DictReader(open(out + ".A.csv")))
B = list(csv.DictReader(open(out + ".B.csv")))
assert [r["epoch"] for r in A] == ["1", "2", "3"], f"run A's rows: epochs {[r['epoch'] for r in A]}"
assert [r["epoch"] for r in B] == ["1", "2", "3"], f"the restarted run's CSV has the epochs {[r['epoch'] for r in B]}, not 1, 2, 3"
for a, b in zip(A, B):
    for c in cols:
        assert abs(float(a[c]) - float(b[c])) <= 1e-12 * max(1.0, abs(float(a[c]))), f"epoch {a['epoch']} {c}: uninterrupted {a[c]}, restarted {b[c]}"
lines = [l for l in open(out + ".B.log").read().splitlines() if l.startswith("epoch ")]
assert [l.endswith("(restored)") for l in lines] == [True, True, False], "progress lines of the restart:\n" + "\n".join(lines)
def plotted(path):
    text = open(path).read()
    block = re.search(r"\$d << EOD\n(.*?)EOD\n", text, re.S).group(1).split("\n")[:-1]
    return [(int(l.split()[0]), float(l.split()[1])) for l in block]
for run in ("B", "C"):
    pts = plotted(f"{out}.{run}.gp")
    assert [e for e, _ in pts] == [1, 2, 3], f"run {run}: the plot has the epochs {[e for e, _ in pts]}, not 1, 2, 3"
    for (e, loss), a in zip(pts, A):
        assert abs(loss - float(a["train_loss"])) <= 1e-8 * abs(loss), f"run {run}: plotted training loss of epoch {e} {loss}, run A {a['train_loss']}"
C = list(csv.DictReader(open(out + ".C.csv")))
assert [r["epoch"] for r in C] == ["1", "2", "3"], f"restart from the final checkpoint: CSV epochs {[r['epoch'] for r in C]}"
assert open(out + ".png", "rb").read()[:4] == b"\x89PNG", "no PNG"
print(f"restart on {sys.argv[2]} rank(s): CSV rows of epochs 1-3 equal to the uninterrupted run's (train_loss {B[-1]['train_loss']}), 2 progress lines "
      "marked (restored), the plot of the restart and of a restart from the final checkpoint hold epochs 1, 2, 3")
PY
