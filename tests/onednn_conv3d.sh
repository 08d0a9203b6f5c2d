#!/bin/bash
# conv3d on oneDNN (issue 31; suite line onednn_conv3d_info): with -net_backend onednn in single precision, a conv3d
# layer's forward, backward data and backward weights run oneDNN's 3-D convolution primitives (-info names each with
# its D x H x W x C geometry and the kernel oneDNN chose); with -net_backend native none runs. Counts must be exact:
#   1. onednn: each of the three ops of the first layer (n 5, in 6x6x6x2, out 6x6x6x4) created once and not fallen back;
#   2. native: no oneDNN convolution at all.
cd "$(dirname "$0")/.." || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm=isolated
out=tests/out/onednnconv3d
mkdir -p tests/out && rm -f $out.*
fail=0
check() { # what count expected
  if [[ "$2" == "$3" ]]; then echo "ok: $1: $2"; else echo "FAIL: $1: $2, expected $3"; fail=1; fi
}
run() { # file backend
  bin/tests/test_precision -net_layers conv3d:4:3:1:1,relu,conv3d:3:3:2:1,flatten,dense:5 -net_input_shape 6x6x6x2 -nsamples 5 \
    -net_precision single -net_backend "$2" -case backend -info > "$1" 2>&1 || { tail -20 "$1"; echo "FAIL: the $2 run"; fail=1; }
}
run $out.onednn onednn
for op in "forward" "backward data" "backward weights"; do
  check "oneDNN convolution $op of the 3-D layer" "$(grep -c "oneDNN convolution $op f32 n 5 in 6x6x6x2 out 6x6x6x4 k 3 stride 1 pad 1 dilation 1 groups 1 bias on [0-9]* threads: [a-z]" $out.onednn)" 1
done
check "3-D convolutions fallen back to native" "$(grep 'oneDNN convolution' $out.onednn | grep -c 'falls back')" 0
run $out.native native
check "oneDNN convolutions with -net_backend native" "$(grep -c 'oneDNN convolution' $out.native)" 0
exit $fail
