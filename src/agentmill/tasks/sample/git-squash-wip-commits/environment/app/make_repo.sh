#!/bin/sh
# Builds the starting repository /app/repo (run once at image build time).
set -e
export GIT_AUTHOR_NAME="Noor Haddad" GIT_AUTHOR_EMAIL="noor@example.com"
export GIT_COMMITTER_NAME="Noor Haddad" GIT_COMMITTER_EMAIL="noor@example.com"
commit() { GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2"; }
git init -q -b main /app/repo
cd /app/repo

cat > export.py <<'TXT'
import json


def to_json(rows):
    return json.dumps(rows, indent=2)
TXT
git add . && commit "2024-04-01T09:00:00Z" "Add export module"
printf '# reportgen\n\nExports report rows as JSON.\n' > README.md
git add . && commit "2024-04-02T09:00:00Z" "Add README"

git checkout -q -b feature/csv-export
cat >> export.py <<'TXT'


def to_csv(rows):
    cols = list(rows[0])
    lines = [",".join(cols)]
TXT
git add . && commit "2024-04-03T09:00:00Z" "wip"
cat >> export.py <<'TXT'
    for row in rows:
        lines.append(",".join(str(row[c]) for c in cols))
    return "\n".join(lines) + "\n"
TXT
git add . && commit "2024-04-03T11:00:00Z" "wip 2"
printf '# reportgen\n\nExports report rows as JSON or CSV.\n' > README.md
git add . && commit "2024-04-03T12:00:00Z" "fix tpyo"
