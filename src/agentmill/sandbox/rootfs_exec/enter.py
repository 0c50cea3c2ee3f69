"""Enter an image's root filesystem as root of a user namespace, then exec a command there.

Run by the host's python3 (stdlib only) *after* `unshare --user --mount --pid --fork` has mapped
the build user to root and its subordinate ids to 1..65535, so nothing here is host root. The
rootfs becomes `/` by pivot_root (not chroot: root of a user namespace could climb out of a
chroot), with a fresh /proc, the host's harmless device nodes and, for network steps, the host's
resolv.conf bound over the image's. Usage: enter.py ROOTFS CWD UID:GID -- ARGV...  (env comes from
stdin as JSON, so nothing of the caller's environment leaks in; UID:GID are the image's, for USER).
"""

import ctypes
import json
import os
import platform
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(src, target, fstype, flags, data=None):
    _check(libc.mount(src.encode() if src else None, target.encode(), fstype.encode() if fstype else None,
                      flags, data.encode() if data else None), f"mount {target}")


def main():
    rootfs, cwd, user = sys.argv[1], sys.argv[2], sys.argv[3]
    argv = sys.argv[sys.argv.index("--") + 1:]
    env = json.loads(sys.stdin.readline() or "{}")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount(rootfs, rootfs, None, MS_BIND | MS_REC)
    proc = os.path.join(rootfs, "proc")
    os.makedirs(proc, exist_ok=True)
    mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    dev = os.path.join(rootfs, "dev")
    os.makedirs(dev, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=755")
    for name in ("null", "zero", "full", "random", "urandom", "tty"):
        target = os.path.join(dev, name)
        open(target, "a").close()
        mount("/dev/" + name, target, None, MS_BIND)
    os.makedirs(os.path.join(dev, "pts"), exist_ok=True)
    os.makedirs(os.path.join(dev, "shm"), exist_ok=True)
    mount("tmpfs", os.path.join(dev, "shm"), "tmpfs", MS_NOSUID | MS_NODEV)
    os.symlink("/proc/self/fd", os.path.join(dev, "fd"))
    resolv = os.path.join(rootfs, "etc", "resolv.conf")
    if os.path.exists("/etc/resolv.conf") and not os.path.islink(resolv):
        os.makedirs(os.path.dirname(resolv), exist_ok=True)
        open(resolv, "a").close()
        mount("/etc/resolv.conf", resolv, None, MS_BIND)
    ca = os.environ.get("AGENTMILL_HOST_CA")
    if ca:  # the host's trust store (it may hold a proxy's CA); the host removes the folder afterwards
        target = os.path.join(rootfs, "run", "agentmill", "ca.crt")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
        mount(ca, target, None, MS_BIND)
    os.chdir(rootfs)
    os.makedirs(".agentmill-oldroot", exist_ok=True)
    _check(libc.syscall(SYS_PIVOT_ROOT, b".", b".agentmill-oldroot"), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(b"/.agentmill-oldroot", MNT_DETACH), "umount old root")
    os.rmdir("/.agentmill-oldroot")
    uid, gid = (int(x) for x in user.split(":"))
    if (uid, gid) != (0, 0):  # a Dockerfile USER: later steps run as that user, as in docker build
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    os.chdir(cwd if os.path.isdir(cwd) else "/")
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
