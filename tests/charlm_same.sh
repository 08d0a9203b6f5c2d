#!/usr/bin/env bash
# bin/charlm: two runs that must print the same numbers (tests/charlm.suite). Usage: tests/charlm_same.sh CASE
#   ranks    train_loss and val_bpc of a short training on 1 rank and on 2 ranks (double precision)
#   sharded  the same on 1 rank and on 2 ranks with -net_parallel sharded
#   tensor   the same on 1 rank and on 2 ranks with -net_parallel tensor (heads and MLP pairs split, Megatron)
#   sequence the same on 1 rank and on 2 ranks with -net_parallel sequence (the tokens split)
#   tensor_stages the same on 1 rank and on 4 ranks in 2 pipeline stages of 2 micro-batches, each stage tensor parallel
#            over its 2 ranks (-net_stages 2 -net_parallel tensor), GPipe and 1F1B
#   tensor_stages_dropout  the same with attention dropout 0.1 in the block (its heads split over each stage's ranks)
#   sequence_stages the same on 1 rank, on 4 ranks in 2 pipeline stages of 2 micro-batches, each stage sequence parallel
#            over its 2 ranks (-net_stages 2 -net_parallel sequence), GPipe and 1F1B, and on 2 ranks unplaced (-net_parallel
#            sequence)
#   sequence_groups the same on 1 rank, on 8 ranks in 2 pipeline stages cut into sequence groups of 2 ranks
#            (-net_stages 2 -net_parallel sequence -net_sequence_ranks 2), 1F1B, and on 4 ranks in 1 stage of 2 groups
#   rope_tensor, rope_sequence  the same two pairs with -charlm_model gpt_rope (rotary positions, no position table)
#   reload   val_bpc of a model trained and saved on 2 ranks (-net_save) and of that file loaded on 1 rank (-net_load,
#            no training)
#   torch    PyTorch -> PetNet: share/bench/charlm_torch.py's GPT (nanoGPT's names, position table, 2 blocks) with random
#            weights in float64, written by petnet_torch.charlm_save() (--save-petnet), and its val_bpc in PyTorch; the
#            file loaded by bin/charlm (-net_load, no training) on 1 and on 2 ranks gives the same val_bpc to 1e-10
#   torch_mlp the same for charlm_torch.py's per-position stand-in (--model mlp: Linear weights as 1x1 conv2d kernels)
# Each pair agrees to a relative 1e-9 (torch: 1e-10; the summary prints 10 decimals of a val_bpc near 7, so 1e-11;
# round-off is about 1e-15), checked by tests/summarycheck against bounds made from the first run; the bin/charlm runs
# under PETSc's leak check.
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
rtol=1e-9
bounds() { # KEY OUTPUT: the key's value in the output's summary, as two bounds at a relative rtol
  grep '^summary:' "$2" | tail -1 | tr ' ' '\n' | awk -F= -v k="$1" -v r="$rtol" '$1 == k { printf "%s >= %.12g\n%s <= %.12g\n", k, $2 - r * ($2 < 0 ? -$2 : $2), k, $2 + r * ($2 < 0 ? -$2 : $2) }'
}
torch() { # MODEL: a model of charlm_torch.py with random weights -> $out.h5 and PyTorch's val_bpc ($out.a); bin/charlm on 1 and 2 ranks
  local small=(-charlm_context 32 -charlm_iterations 0 -charlm_val_windows 64 -net_load "$out.h5")
  /usr/bin/python3 share/bench/charlm_torch.py --save-petnet "$out.h5" --model "$1" --context 32 --embed 16 --heads 4 --depth 2 --val-windows 64 > "$out.a" 2>&1 ||
    { echo "charlm_torch.py --save-petnet failed:"; tail -20 "$out.a"; exit 1; }
  head -1 "$out.a"
  run 1 "$out.b" "${small[@]}"
  run 2 "$out.c" "${small[@]}"
}
case $case in
  ranks)   run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}"; keys=(train_loss val_bpc) ;;
  sharded) run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}" -net_parallel sharded; keys=(train_loss val_bpc) ;;
  tensor)  run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}" -net_parallel tensor; keys=(train_loss val_bpc) ;;
  tensor_stages) run 1 "$out.a" "${tiny[@]}"; run 4 "$out.b" "${tiny[@]}" -net_stages 2 -net_microbatches 2 -net_parallel tensor
    run 4 "$out.c" "${tiny[@]}" -net_stages 2 -net_microbatches 2 -net_parallel tensor -net_pipeline_schedule 1f1b; keys=(train_loss val_bpc) ;;
  tensor_stages_dropout) drop=(-layer2_res_layer1_attention_dropout 0.1); run 1 "$out.a" "${tiny[@]}" "${drop[@]}"
    run 4 "$out.b" "${tiny[@]}" "${drop[@]}" -net_stages 2 -net_microbatches 2 -net_parallel tensor
    run 4 "$out.c" "${tiny[@]}" "${drop[@]}" -net_stages 2 -net_microbatches 2 -net_parallel tensor -net_pipeline_schedule 1f1b; keys=(train_loss val_bpc) ;;
  sequence_stages) run 1 "$out.a" "${tiny[@]}"; run 4 "$out.b" "${tiny[@]}" -net_stages 2 -net_microbatches 2 -net_parallel sequence
    run 4 "$out.c" "${tiny[@]}" -net_stages 2 -net_microbatches 2 -net_parallel sequence -net_pipeline_schedule 1f1b; run 2 "$out.d" "${tiny[@]}" -net_parallel sequence; keys=(train_loss val_bpc) ;;
  sequence_groups) run 1 "$out.a" "${tiny[@]}"; run 8 "$out.b" "${tiny[@]}" -net_stages 2 -net_microbatches 2 -net_parallel sequence -net_sequence_ranks 2 -net_pipeline_schedule 1f1b
    run 4 "$out.c" "${tiny[@]}" -net_stages 1 -net_microbatches 2 -net_parallel sequence -net_sequence_ranks 2; keys=(train_loss val_bpc) ;;
  sequence) run 1 "$out.a" "${tiny[@]}"; run 2 "$out.b" "${tiny[@]}" -net_parallel sequence; keys=(train_loss val_bpc) ;;
  rope_tensor)   run 1 "$out.a" "${tiny[@]}" -charlm_model gpt_rope; run 2 "$out.b" "${tiny[@]}" -charlm_model gpt_rope -net_parallel tensor; keys=(train_loss val_bpc) ;;
  rope_sequence) run 1 "$out.a" "${tiny[@]}" -charlm_model gpt_rope; run 2 "$out.b" "${tiny[@]}" -charlm_model gpt_rope -net_parallel sequence; keys=(train_loss val_bpc) ;;
  reload)  run 2 "$out.a" "${tiny[@]}" -net_save "$out.h5"; run 1 "$out.b" "${tiny[@]}" -charlm_iterations 0 -net_load "$out.h5"; keys=(val_bpc) ;;
  torch)   torch gpt; keys=(val_bpc); rtol=1e-10 ;;
  torch_mlp) torch mlp; keys=(val_bpc); rtol=1e-10 ;;
  *) echo "usage: $0 ranks|sharded|tensor|tensor_stages|tensor_stages_dropout|sequence_stages|sequence_groups|sequence|rope_tensor|rope_sequence|reload|torch|torch_mlp"; exit 2 ;;
esac
for k in "${keys[@]}"; do bounds "$k" "$out.a"; done > "$out.check"
[[ $(wc -l < "$out.check") -eq $((2 * ${#keys[@]})) ]] || { echo "the first run's summary lacks ${keys[*]}:"; tail -3 "$out.a"; exit 1; }
grep '^summary:' "$out.a" | tail -1
for o in "$out.b" $([[ $case == torch* || $case == tensor_stages* || $case == sequence_stages || $case == sequence_groups ]] && echo "$out.c") $([[ $case == sequence_stages ]] && echo "$out.d"); do
  grep '^summary:' "$o" | tail -1
  python3 tests/summarycheck "$out.check" "$o" || exit 1
done
echo "same ${keys[*]} ($case, relative $rtol)"
