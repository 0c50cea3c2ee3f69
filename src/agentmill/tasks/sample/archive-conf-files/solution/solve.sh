#!/bin/bash
set -euo pipefail
cd /app/etc-snapshot
find . -type f -name '*.conf' -print0 | tar --null -czf /app/backup.tar.gz -T -
