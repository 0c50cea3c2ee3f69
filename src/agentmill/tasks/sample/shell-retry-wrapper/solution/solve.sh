#!/bin/bash
set -euo pipefail
cat > /app/bin/retry.sh <<'SH'
#!/bin/bash
# retry.sh MAX_ATTEMPTS COMMAND [ARGS...] - rerun COMMAND until it succeeds.
usage() { echo "usage: retry.sh MAX_ATTEMPTS COMMAND [ARGS...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
max=$1; shift
[[ $max =~ ^[0-9]+$ ]] && [ "$((10#$max))" -gt 0 ] || usage
max=$((10#$max))
status=0
for ((attempt = 1; attempt <= max; attempt++)); do
  "$@" && exit 0
  status=$?
  echo "retry.sh: attempt $attempt/$max failed with status $status" >&2
done
exit "$status"
SH
chmod +x /app/bin/retry.sh
