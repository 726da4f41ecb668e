# device call 2 (nvidia-h200), run from the repo root; km-tma.py with CONFIGS = CONFIGS_2 (variant C there had no tag check)
cd benches/runs/2026-11-29-session37 && PYTHONUNBUFFERED=1 timeout 300 python3 km-tma.py 200 2 2>&1 | tee $OUT/km-tma-2.txt
