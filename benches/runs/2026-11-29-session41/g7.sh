#!/usr/bin/env bash
# Session 41, call g7: (1) what a ptxas process costs on this host: a process that does
# nothing (/bin/true), `ptxas --version`, a 12-line kernel, and four of the catalogue's kernels
# (kmeans_assign at both tiers, softmax and layer norm rows at the fast tier) at -O3 and -O1,
# five times each, and the same run locally for comparison (PTX in s41-pack/ptx); (2) the GPU
# suite on the commit in the MANIFEST, the interpreter's tests first. Carry ["s41-pack"].
set -u
P=$PWD/s41-pack; R=$PWD
nvidia-smi -L; cat "$P/MANIFEST"
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas); echo "ptxas: $PTXAS"; $PTXAS --version | tail -1
ms() { local t0=$(date +%s%N); "$@" > /dev/null 2>&1; echo $(( ($(date +%s%N) - t0) / 1000000 )); }
echo "true: $(for i in 1 2 3 4 5; do ms /bin/true; done | tr '\n' ' ')"
echo "ptxas --version: $(for i in 1 2 3 4 5; do ms $PTXAS --version; done | tr '\n' ' ')"
for f in tid kmeans_assign-0 kmeans_assign-0-fast softmax_rows-0-fast layernorm_rows-0-fast; do
  for O in 3 1; do
    echo "$f -O$O: $(for i in 1 2 3 4 5; do ms $PTXAS -arch=sm_90 -O$O -o /tmp/x.cubin $P/ptx/$f.ptx; done | tr '\n' ' ')"
  done
done
W=/tmp/w41; rm -rf $W; mkdir -p $W
xz -dc "$P/kiln-tests.xz" > $W/kiln-tests && chmod +x $W/kiln-tests
export KILN_DEVICE=cuda:0 KILN_REPO=$R INSTA_WORKSPACE_ROOT=$R INSTA_UPDATE=no KILN_DATA=$P/data
KILN_CACHE_DIR=$(mktemp -d) timeout 150 $W/kiln-tests interp_gpu fused_props --test-threads 4 > "$OUT/interp-tests.txt" 2>&1
echo "interp and fused_props tests rc $?" >> "$OUT/interp-tests.txt"
grep -E "^test .*(FAILED|ok)$|test result|panicked|rc " "$OUT/interp-tests.txt" | grep -v ' ok$' | head -20
cd "$R" && KILN_DATA=$P/data timeout 360 bash "$P/run.sh" > "$OUT/suite.txt" 2>&1; echo "suite rc $?" >> "$OUT/suite.txt"
grep -E "^gpu: |FAILED|panicked|suite rc|test result|^== " "$OUT/suite.txt" | tail -25
