#!/usr/bin/env bash
# Installs the Debian packages the project needs, and only those missing.
#
#   scripts/install-deps.sh [EXTRA_PACKAGE ...]
#
# With everything present it calls nothing but dpkg-query. As root it runs
# apt-get itself; otherwise it uses sudo when sudo works without a prompt
# or a terminal can answer it; else it prints one line listing the packages.
set -euo pipefail

packages=(cmake g++ ninja-build libxtensor-dev xtl-dev libxsimd-dev
          libxtensor-blas-dev libopenblas-dev doctest-dev "$@")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  run=()
elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
  run=(sudo)
else
  echo "install-deps: missing packages, install them as root: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${run[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${run[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
