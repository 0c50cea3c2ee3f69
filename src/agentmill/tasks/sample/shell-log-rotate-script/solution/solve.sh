#!/bin/bash
set -euo pipefail
mkdir -p /app/bin
cat > /app/bin/rotate.sh <<'SH'
#!/bin/bash
# rotate.sh LOGFILE KEEP - numbered log rotation.
set -u
die() { echo "rotate.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: rotate.sh LOGFILE KEEP"
log=$1 keep=$2
[[ $keep =~ ^[0-9]+$ ]] && [ "$((10#$keep))" -gt 0 ] || die "KEEP must be a positive integer"
keep=$((10#$keep))
[ -f "$log" ] || die "no such file: $log"

nums=()
for f in "$log".*; do
  suffix=${f#"$log".}
  [[ -e $f && $suffix =~ ^[0-9]+$ ]] && nums+=("$((10#$suffix))")
done
if [ ${#nums[@]} -gt 0 ]; then
  for n in $(printf '%s\n' "${nums[@]}" | sort -rn); do
    if [ $((n + 1)) -gt "$keep" ]; then
      rm -f -- "$log.$n"
    else
      mv -- "$log.$n" "$log.$((n + 1))"
    fi
  done
fi
mv -- "$log" "$log.1"
: > "$log"
# KEEP >= 1, so LOGFILE.1 always stays.
SH
chmod +x /app/bin/rotate.sh
