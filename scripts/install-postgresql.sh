#!/usr/bin/env bash
# Installs Debian's postgresql (initdb, pg_ctl), which internal/pgtest starts for the job store's
# PostgreSQL tests (jobs, tests TestVideoReplicas*). Nothing is configured system-wide: each test
# makes its own data directory and port.
set -euo pipefail
cd "$(dirname "$0")/.."
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || scripts/apt-ensure.sh pg_ctlcluster:postgresql
