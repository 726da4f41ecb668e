#!/usr/bin/env bash
# On the GPU machine: runs suite tests under a compute-sanitizer tool and, if they still run
# after SECS seconds, samples their threads (/proc state, syscall, wait channel) and dumps
# every thread's stack with cuda-gdb (how session 6 found the lazy-loading deadlock).
#
#   bash scripts/gpu/hang.sh TOOL FILTER [SECS]      (THREADS=N: --test-threads, default 1)
#
# Needs gpu-pack/ (scripts/gpu/pack.sh). Logs go to $OUT.
tool=$1; test=$2; secs=${3:-120}
export KILN_GPU_SANITIZER=1
[[ -x /tmp/kt ]] || { xz -dc gpu-pack/kiln-tests.xz > /tmp/kt; chmod +x /tmp/kt; }
CS=/usr/local/cuda/bin/compute-sanitizer
ktpids() { for d in /proc/[0-9]*; do [[ "$(readlink $d/exe 2>/dev/null)" == /tmp/kt ]] && basename $d; done; }
log=${OUT:-/tmp}/$tool-$(echo "$test" | tr ':' '_').log
threads=${THREADS:-1}
( timeout $((secs + 60)) $CS --tool "$tool" --report-api-errors no /tmp/kt --skip examples:: --test-threads "$threads" "$test" > "$log" 2>&1; echo "exit $?" >> "$log" ) &
sleep 5
for ((i = 5; i < secs; i++)); do [[ -n "$(ktpids)" ]] || break; sleep 1; done
for p in $(ktpids); do
  echo "== $tool $test: PID $p still running after $secs s"
  for pass in 1 2; do
    for t in /proc/$p/task/*; do
      echo "$(basename $t) $(cat $t/comm) state=$(awk '{print $3, "utime=" $14, "stime=" $15}' $t/stat) syscall=$(cut -d' ' -f1 $t/syscall 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null)"
    done
    sleep 5
  done
  timeout 60 /usr/local/cuda/bin/cuda-gdb -batch -p "$p" -ex "set pagination off" -ex "thread apply all bt 25" 2>&1 | grep -v "^\[New\|^warning" | head -300
done
wait
tail -5 "$log"
