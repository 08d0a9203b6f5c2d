#!/usr/bin/env bash
# bin/charlm: two runs that must print the same numbers (tests/charlm.suite). Usage: tests/charlm_same.sh CASE
#   ranks    train_loss and val_bpc of a short training on 1 rank and on 2 ranks (double precision)
#   sharded  the same on 1 rank and on 2 ranks with -net_parallel sharded
#   tensor   the same on 1 rank and on 2 ranks with -net_parallel tensor (heads and MLP pairs split, Megatron)
#   sequence the same on 1 rank and on 2 ranks with -net_parallel sequence (the tokens split)
#   rope_tensor, rope_sequence  the same two pairs with -charlm_model gpt_rope (rotary positions, no position table)
#   reload   val_bpc of a model trained and saved on 2 ranks (-net_save) and of that file loaded on 1 rank (-net_load,
#            no training)
# Each pair agrees to a relative 1e-9 (the summary prints 10 decimals; round-off is about 1e-15), checked by
# tests/summarycheck against bounds made from the first run; both runs under PETSc's leak check.
cd "$(dirname "$0")/.." || exit 2
case=$1
tiny=(-charlm_context 32 -charlm_embed 32 -charlm_heads 4 -charlm_depth 1 -charlm_iterations 30 -charlm_lr 1e-2 -charlm_val_windows 64)
mkdir -p tests/out
out=tests/out/charlm_same_$case
run() { # NRANKS OUTPUT options...
  local n=$1 o=$2
  shift 2
  mpiexec -n "$n" bin/charlm "$@" -malloc_debug -malloc_dump > "$o" 2>&1 || { echo "bin/charlm on $n rank(s) failed:"; tail -20 "$o"; exit 1; }
  if grep -q -E "^\[ *[0-9]+\] [0-9]+ bytes|PETSC ERROR" "$o"; then echo "leak or PETSc error in $o:"; tail -20 "$o"; exit 1; fi
}
bounds() { # KEY OUTPUT: the key's value in the output's summary, as two bounds at a relative 1e-9
  grep '^summary:' "$2" | tail -1 | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { printf "%s >= %.12g\n%s <= %.12g\n", k, $2 - 1e-9 * ($2 < 0 ? -$2 : $2), k, $2 + 1e-9 * ($2 < 0 ? -$2 : $2) }'
}
case $case in
  ranks)   run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}"; keys=(train_loss val_bpc) ;;
  sharded) run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}" -net_parallel sharded; keys=(train_loss val_bpc) ;;
  tensor)  run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}" -net_parallel tensor; keys=(train_loss val_bpc) ;;
  sequence) run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}" -net_parallel sequence; keys=(train_loss val_bpc) ;;
  rope_tensor)   run 1 "$out.a" "${tiny[@]}" -charlm_model gpt_rope; run 2 "$out.b" "${tiny[@]}" -charlm_model gpt_rope -net_parallel tensor; keys=(train_loss val_bpc) ;;
  rope_sequence) run 1 "$out.a" "${tiny[@]}" -charlm_model gpt_rope; run 2 "$out.b" "${tiny[@]}" -charlm_model gpt_rope -net_parallel sequence; keys=(train_loss val_bpc) ;;
  reload)  run 2 "$out.a" "${tiny[@]}" -net_save "$out.h5"; run 1 "$out.b" "${tiny[@]}" -charlm_iterations 0 -net_load "$out.h5"; keys=(val_bpc) ;;
  *) echo "usage: $0 ranks|sharded|tensor|sequence|rope_tensor|rope_sequence|reload"; exit 2 ;;
esac
for k in "${keys[@]}"; do bounds "$k" "$out.a"; done > "$out.check"
[[ $(wc -l < "$out.check") -eq $((2 * ${#keys[@]})) ]] || { echo "the first run's summary lacks ${keys[*]}:"; tail -3 "$out.a"; exit 1; }
grep '^summary:' "$out.a" | tail -1
grep '^summary:' "$out.b" | tail -1
python3 tests/summarycheck "$out.check" "$out.b" || exit 1
echo "same ${keys[*]} ($case)"
