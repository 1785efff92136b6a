#!/usr/bin/env bash
# Stop the JournalNodes that start-journalnodes.sh started on this host.
#
#   sbin/stop-journalnodes.sh [--config DIR]
set -u
bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$bin/journalnodes-py.sh" stop "$@"
