#!/usr/bin/env bash
# Session 36, call 6: call 4's rounds (g4.sh) with the new binary counting the look-ahead's
# blocks in at their start, against db4aab2. Carry la-bench/.
exec bash "$(dirname "${BASH_SOURCE[0]}")/g4.sh"
