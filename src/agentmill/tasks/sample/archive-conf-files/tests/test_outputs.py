#!/usr/bin/env python3
"""Outcome checks for this task. Prints PASS/FAIL per check; exits non-zero on any failure."""
import os
import sys
import tarfile

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def main():
    failed = 0
    for fn in CHECKS:
        try:
            fn()
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - any error is a failed check
            failed += 1
            print(f"FAIL {fn.__name__}: {e!r}")
    print(f"{len(CHECKS) - failed}/{len(CHECKS)} checks passed")
    sys.exit(1 if failed else 0)


SRC = "/app/etc-snapshot"
ARCHIVE = "/app/backup.tar.gz"
# every file in the snapshot (relative path -> contents)
SNAPSHOT = {'app/app.conf': '[main]\nname = ledger\nworkers = 4\n',
            'app/app.conf.bak': '[main]\nname = ledger\nworkers = 2\n',
            'app/notes.txt': 'remember to rotate the keys\n',
            'db/my.cnf': '[mysqld]\nmax_connections = 150\n',
            'db/replica.conf': 'primary_host = 10.0.4.12\nlag_alert_seconds = 30\n',
            'host.conf': 'hostname = build-07\n',
            'logging.conf.d/README': 'rotate = weekly\n',
            'logging.conf.d/json.conf': 'level = info\nformat = json\n',
            'nginx/conf.d/gzip.conf': 'gzip on;\ngzip_types text/plain application/json;\n',
            'nginx/nginx.conf': 'worker_processes 2;\nevents { worker_connections 512; }\n',
            'nginx/sites/default.conf': 'server {\n  listen 8080;\n  root /srv/www;\n}\n',
            'nginx/sites/old.conf.disabled': '# disabled site\n',
            'ssh/ssh_config': 'Host *\n  ServerAliveInterval 60\n'}
WANTED = {p: c for p, c in SNAPSHOT.items() if p.endswith(".conf")}


def norm(name):
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def members():
    with tarfile.open(ARCHIVE, "r:gz") as tf:
        return {norm(m.name): tf.extractfile(m).read().decode() for m in tf.getmembers() if m.isfile()}


@check
def archive_is_gzipped_tar():
    with open(ARCHIVE, "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b", "not gzip-compressed"
    assert tarfile.is_tarfile(ARCHIVE)


@check
def archive_has_exactly_the_conf_files():
    got = members()
    assert sorted(got) == sorted(WANTED), f"archive holds {sorted(got)}"


@check
def archived_contents_match():
    got = members()
    for path, content in WANTED.items():
        assert got.get(path) == content, f"wrong contents for {path}"


@check
def snapshot_left_untouched():
    for rel, content in SNAPSHOT.items():
        p = os.path.join(SRC, rel)
        assert os.path.isfile(p), f"{p} is gone"
        with open(p) as fh:
            assert fh.read() == content, f"{p} was modified"


if __name__ == "__main__":
    main()
