#!/usr/bin/env bash
# Call 1 (measure): where the driver's JIT time of the first call's PTX goes, and main's figures.
cd "$(dirname "$0")" || exit 1
exec > $OUT/cold-go1.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
which ptxas; ptxas --version | tail -1
(xz -d -T8 kiln-bench-main.xz && chmod +x kiln-bench-main) || echo "unpack failed"
export PATH=/usr/local/cuda/bin:$PATH
j() { echo "-- $*"; timeout 30 python3 jit_time.py "$@"; }
python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1')"  # page cache
echo "== A: JIT cache off: fast x3 in a new process"; for r in 1 2; do CUDA_CACHE_DISABLE=1 j fast.ptx fast.ptx fast.ptx; done
echo "== B: plain then fast"; for r in 1 2; do CUDA_CACHE_DISABLE=1 j plain.ptx fast.ptx fast-noslow.ptx optimized.ptx plain.ptx; done
echo "== C: fast-noslow first"; CUDA_CACHE_DISABLE=1 j fast-noslow.ptx fast.ptx
echo "== D: optimized first"; CUDA_CACHE_DISABLE=1 j optimized.ptx optimized.ptx
echo "== E: dlopen the JIT library first"; for r in 1 2; do CUDA_CACHE_DISABLE=1 j --dlopen fast.ptx fast.ptx; done
echo "== F: plain.ptx on a background thread, main sleeps 14 ms then loads fast"; for r in 1 2; do CUDA_CACHE_DISABLE=1 j --bg plain.ptx --sleep 14 fast.ptx; done
echo "== F2: the same, sleep 5"; CUDA_CACHE_DISABLE=1 j --bg plain.ptx --sleep 5 fast.ptx
echo "== F3: the same, sleep 25"; CUDA_CACHE_DISABLE=1 j --bg plain.ptx --sleep 25 fast.ptx
echo "== G: cache on: plain (cached after the first) on bg, fast unique"; for r in 1 2 3; do j --bg plain.ptx --sleep 14 --unique fast.ptx; done
echo "== H: cache on: disk-hit-like: fast (cached), then alloc + launch"; j fast.ptx; for r in 1 2; do LAUNCH=1 j fast.ptx; done
echo "== I: ptxas -v compile time (5 each)"
for f in plain fast fast-noslow optimized; do for i in 1 2 3 4 5; do echo "$f $(ptxas -arch=sm_90 -v $f.ptx -o /tmp/x.cubin 2>&1 | grep 'Compile time')"; done; done
for f in plain fast optimized; do s=$(date +%s%N); ptxas -arch=sm_90 $f.ptx -o /tmp/x.cubin; echo "$f process $(( ($(date +%s%N)-s)/1000 )) us"; done
echo "== J: main's kiln-bench first call"
export KILN_DEVICE=cuda:0
child() { timeout 60 ./kiln-bench-main --first-call-child 2>&1 | grep -E "^first"; }
KILN_CACHE_DIR=/tmp/kc-w child > /dev/null
for r in 1 2; do
  rm -rf /tmp/kc; export KILN_CACHE_DIR=/tmp/kc
  echo "round $r cold, JIT cache off"; CUDA_CACHE_DISABLE=1 child
  echo "round $r disk hit (JIT cache on)"; child; child
done
rm -rf /tmp/kc; echo "cold, JIT cache on (this PTX already in the driver's cache)"; child
