#!/usr/bin/env bash
# Stop the JournalNodes that start-journalnodes.sh started on this host (by their pid files).
#
#   stop-journalnodes.sh [--config DIR]
set -u
sbin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$sbin/journalnodes-py.sh" stop "$@"
