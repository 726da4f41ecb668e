#!/usr/bin/env bash
# Session 36, call 5: call 3's GPU tests of the scans (g3.sh), on the code whose look-ahead
# blocks count themselves in at their start. Carry la-pack/.
exec bash "$(dirname "${BASH_SOURCE[0]}")/g3.sh"
