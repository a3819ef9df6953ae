#!/usr/bin/env bash
# Install the Debian packages given that are missing, when run as root on a machine with apt (else nothing).
set -euo pipefail
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    missing=$(for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
    if [ -n "$missing" ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    fi
fi
