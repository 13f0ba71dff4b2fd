#!/bin/sh
# Make sure Debian's `prometheus` package (2.42) is installed: the tests run its `prometheus` server
# (scraping the test brokers and the service) and its `promtool` (`check metrics|rules`,
# `test rules`), and fail without them. Installs the package when either binary is missing, we are
# root and apt-get exists; otherwise exits 1 saying why. Where systemd runs, the package's postinst
# starts the `prometheus` service (port 9090), as any install of that package does.
set -u

have() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }

if have; then
    echo "prometheus: $(command -v prometheus), promtool: $(command -v promtool)"
    exit 0
fi
missing="the tests need Debian's prometheus package (the prometheus and promtool binaries)"
if [ "$(id -u)" != 0 ]; then
    echo "prometheus: not installed, and not root: $missing; install it (apt-get install prometheus)" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "prometheus: not installed, and no apt-get here: $missing" >&2
    exit 1
fi

log=$(mktemp "${TMPDIR:-/tmp}/prometheus-install.XXXXXX")
install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >>"$log" 2>&1
}
echo "prometheus: installing Debian's prometheus package (apt-get; log: $log)"
# A fresh machine has no package lists yet: update them when the first try fails.
if install || { apt-get update >>"$log" 2>&1 && install; }; then
    if have; then
        echo "prometheus: $(command -v prometheus), promtool: $(command -v promtool)"
        rm -f "$log"
        exit 0
    fi
    echo "prometheus: the prometheus package installed no prometheus/promtool binary: $missing" >&2
else
    echo "prometheus: apt-get could not install prometheus: $missing" >&2
    tail -n 5 "$log" | sed 's/^/  /' >&2
fi
exit 1
