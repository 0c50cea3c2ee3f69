#!/bin/sh
# Builds the starting repository /app/repo (run once at image build time).
set -e
export GIT_AUTHOR_NAME="Sam Lee" GIT_AUTHOR_EMAIL="sam@example.com"
export GIT_COMMITTER_NAME="Sam Lee" GIT_COMMITTER_EMAIL="sam@example.com"
commit() { GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2"; }
git init -q -b main /app/repo
cd /app/repo
mkdir -p config scripts

printf 'retention_days: 7\ncompression: gzip\nnotify: ops@example.com\n' > config/defaults.yaml
printf '#!/bin/sh\necho "nightly backup"\n' > scripts/backup.sh
git add . && commit "2024-01-10T08:00:00Z" "Add backup job skeleton"

printf 'retention_days: 30\ncompression: zstd\nnotify: backups@example.com\nexclude:\n  - "*.tmp"\n  - cache/\n' > config/defaults.yaml
git add . && commit "2024-01-12T08:00:00Z" "Tune backup defaults"

printf '#!/bin/sh\n# superseded by backup.sh\nrsync -a /data /mnt/old\n' > scripts/legacy_sync.sh
git add . && commit "2024-01-13T08:00:00Z" "Import legacy sync script"

printf '#!/bin/sh\nset -e\necho "nightly backup"\ntar czf /backups/nightly.tgz /data\n' > scripts/backup.sh
git add . && commit "2024-01-15T08:00:00Z" "Make backup script create a tarball"

git rm -q config/defaults.yaml scripts/legacy_sync.sh
commit "2024-01-18T08:00:00Z" "Remove unused files"

printf '# backup-tools\n\nNightly backup scripts.\n' > README.md
git add . && commit "2024-01-20T08:00:00Z" "Add README"
