#!/bin/bash
# lead, session 31, device call 2: where a cold example's time goes (each example in a new
# process with an empty kiln cache, KILN_HOST_TRACE=1: the main thread split at kiln's trace
# points; then untraced GPU and CPU wall times); the fused 48-op chain with launch lists off
# (KILN_GPU_GRAPHS=off: each launch issued as made) against the default.
set -u
ROOT=$PWD; P=$PWD/lead-pack; R=$OUT/r; mkdir -p $R; S=$SECONDS
t() { echo "$1 $((SECONDS-S)) s" >> $R/times.txt; }
cd $P; for f in kiln-bench kiln-examples; do rm -f $f; xz -d -T4 -k $f.xz; chmod +x $f; done
nvidia-smi -L > $R/device.txt 2>&1
data=$P/data
cd /tmp
for mode in trace plain; do
for name in digits_stats kmeans gmm image_pipeline softmax_layernorm; do
  case $name in
    digits_stats) args=("$data/digits_x.npy") ;;
    kmeans) args=("$data/digits_x.npy" "$data/digits_y.npy") ;;
    gmm) args=("$data/iris_x.npy" "$data/iris_y.npy") ;;
    image_pipeline) args=("$data/china.npy" /tmp/edges.png) ;;
    softmax_layernorm) args=() ;;
  esac
  for dev in cuda:0 cpu; do
    [ $mode = trace ] && [ $dev = cpu ] && continue
    c=$(mktemp -d)
    tr=""; [ $mode = trace ] && tr=1
    t0=$(date +%s%N)
    KILN_HOST_TRACE=$tr KILN_CACHE_DIR=$c KILN_DEVICE=$dev timeout 60 bash -c 'exec -a "$0" "$1" "${@:2}"' "$name" $P/kiln-examples "${args[@]}" > $R/ex-$name-$dev-$mode.txt 2>&1
    rc=$?
    t1=$(date +%s%N)
    printf "%-6s %-18s %-7s rc %d  %d ms\n" "$mode" "$name" "$dev" "$rc" "$(( (t1 - t0) / 1000000 ))" >> $R/examples.txt
    rm -rf "$c"
  done
done
done
t examples
cd $P
export KILN_DEVICE=cuda:0
for i in 1 2; do
  KILN_CACHE_DIR=/tmp/c-b timeout 60 ./kiln-bench tiny_chain_48ops --reps 25 > $R/bench-default-$i.txt 2>&1
  KILN_GPU_GRAPHS=off KILN_CACHE_DIR=/tmp/c-b timeout 60 ./kiln-bench tiny_chain_48ops --reps 25 > $R/bench-off-$i.txt 2>&1
done
KILN_GPU_GRAPHS=off KILN_HOST_TRACE=1 KILN_CACHE_DIR=/tmp/c-b timeout 60 ./kiln-bench tiny_chain_48ops_fuse --reps 25 > $R/bench-off-trace.txt 2>&1
t bench
{ cat $R/times.txt $R/device.txt $R/examples.txt; grep -h "^tiny_chain" $R/bench-*.txt | grep -v "host time"; grep -h "host trace" $R/bench-off-trace.txt; for f in $R/ex-*-trace.txt; do echo "== $f"; sed -n '/host trace/,$p' $f | head -14; done; } > $OUT/summary.txt 2>&1
tar czf $OUT/all.tgz -C $R .
cat $OUT/summary.txt
