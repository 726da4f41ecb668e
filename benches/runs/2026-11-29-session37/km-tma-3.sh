# device call 3 (nvidia-h200), run from the repo root; km-tma.py's CONFIGS (call 3 list: variant C with the tag check)
cd benches/runs/2026-11-29-session37 && PYTHONUNBUFFERED=1 timeout 200 python3 km-tma.py 120 3 2>&1 | tee $OUT/km-tma-3.txt
