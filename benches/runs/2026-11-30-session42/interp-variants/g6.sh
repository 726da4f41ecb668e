#!/usr/bin/env bash
# Session 42, call g6: the interpreter (main's, with a prologue of none) against float32
# registers in a plane of their own (planes: 32-bit values one LDS.32), alternated. Carry ["s42"].
set -u
cd s42; nvidia-smi -L
gcc -O2 ib2.c -o /tmp/ib -ldl -lm || exit 1
for k in 1 2; do IB_OCC=1 /tmp/ib out/ref.cubin out/base.cubin:4 out/planes.cubin:4 out/base.cubin:4 out/planes.cubin:4 | tee -a $OUT/ib-planes.txt; done
