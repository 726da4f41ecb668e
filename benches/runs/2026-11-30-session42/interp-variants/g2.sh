#!/usr/bin/env bash
# Session 42, call g2: interpreter variants (v1: one dispatch on (type, op); v2: the program
# decoded once a block; MINB: launch bounds' blocks; _8: eight lanes), each launched as kiln
# does (IB_OCC=0) and with the shared memory carveout at its largest and a grid of the
# resident blocks (IB_OCC=1). Carry ["s42"].
set -u
cd s42; nvidia-smi -L
gcc -O2 ib.c -o /tmp/ib -ldl -lm || exit 1
V="out/v2_m6.cubin:4 out/v2p_m6.cubin:4 out/v2p_m5.cubin:4 out/v2_m7.cubin:4 out/v2_m8.cubin:4"
for occ in 1; do IB_OCC=$occ /tmp/ib out/ref.cubin $V | tee $OUT/ib-occ$occ.txt; done
IB_N=1048576 IB_OCC=1 /tmp/ib out/ref.cubin $V | tee $OUT/ib-2e20-occ1.txt
IB_OCC=1 /tmp/ib out/ref.cubin $V > $OUT/ib-occ1-b.txt; cat $OUT/ib-occ1-b.txt
