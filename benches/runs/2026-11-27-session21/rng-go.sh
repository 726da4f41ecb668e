#!/usr/bin/env bash
# On the device (session 21, rng helper): GPU tests of the random draws, kiln-bench's copy,
# random_normal and dropout rows, and peers_ops.py's rows of the same names, in one call.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
(cd rng-pack && xz -d -T4 kiln-tests.xz kiln-bench.xz && chmod +x kiln-*)
mkdir -p /work && ln -sfn "$root" /work/wt-rng
export KILN_DEVICE=cuda:0 KILN_REPO=$root KILN_CACHE_DIR=/tmp/kiln-cache
timeout 120 ./rng-pack/kiln-tests random --test-threads 4 > $OUT/tests-full.txt 2>&1; grep -E "test result|FAILED|panicked|failed|error 700|illegal" $OUT/tests-full.txt | head -20
timeout 90 ./rng-pack/kiln-bench copy random_normal dropout --reps 25 2>&1 | tee $OUT/bench.txt | tail -8
(cd rng-pack && timeout 120 python3 peers_ops.py copy random_normal dropout 2>&1 | grep -v Warning | tail -8) | tee $OUT/peers.txt
# SASS of the dropout and normal kernels (PTX from `kernel_code`): the opcode histogram of each.
for k in dropout normal; do
  (cd rng-pack && ptxas -arch=sm_90 $k.ptx -o /tmp/$k.cubin && cuobjdump -sass /tmp/$k.cubin > $OUT/$k.sass 2>&1 &&
   echo "$k: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/$k.sass) SASS instructions" &&
   grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' $OUT/$k.sass | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -14 | tr '\n' ' '; echo)
done | tee $OUT/sass-summary.txt
(cd $OUT && tar czf sass.tgz dropout.sass normal.sass && rm dropout.sass normal.sass)
