#!/usr/bin/env bash
# Session 36, call 10: call 7's whole GPU suite (g7.sh) on fc8dad2 (kept buffers never
# dropped). Carry final-pack/.
exec bash "$(dirname "${BASH_SOURCE[0]}")/g7.sh"
