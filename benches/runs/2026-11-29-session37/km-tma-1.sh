# device call 1 (nvidia-h200), run from the repo root; km-tma.py with CONFIGS = CONFIGS_1 (the list of call 1)
cd benches/runs/2026-11-29-session37 && nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader; PYTHONUNBUFFERED=1 timeout 400 python3 km-tma.py 300 1 2>&1 | tee $OUT/km-tma-1.txt
