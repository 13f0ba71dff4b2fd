#!/bin/sh
# Install promtool (Debian's `prometheus` package, 2.42, ships it) where that can be done, for the
# tests that run `promtool check metrics|rules` and `promtool test rules` (they are skipped without
# it). Only when promtool is missing, we are root and apt-get exists; never fails: it says why not.
# The package also ships the `prometheus` server; where systemd runs, its postinst starts the
# `prometheus` service (port 9090), as any install of that package does.
set -u

if command -v promtool >/dev/null 2>&1; then
    echo "promtool: $(command -v promtool)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "promtool: not installed, and not root: not installing Debian's prometheus package" \
         "(the promtool tests will be skipped)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "promtool: not installed, and no apt-get here (the promtool tests will be skipped)"
    exit 0
fi

log=$(mktemp "${TMPDIR:-/tmp}/promtool-install.XXXXXX")
install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >>"$log" 2>&1
}
echo "promtool: installing Debian's prometheus package (apt-get; log: $log)"
# A fresh machine has no package lists yet: update them when the first try fails.
if install || { apt-get update >>"$log" 2>&1 && install; }; then
    if command -v promtool >/dev/null 2>&1; then
        echo "promtool: $(command -v promtool)"
        rm -f "$log"
        exit 0
    fi
    echo "promtool: the prometheus package installed no promtool (the promtool tests will be skipped)"
else
    echo "promtool: apt-get could not install prometheus (the promtool tests will be skipped):"
    tail -n 5 "$log" | sed 's/^/  /'
fi
exit 0
