#!/bin/sh
# Install a tool the tests run from its Debian package, where that can be done: only when COMMAND is
# missing, we are root and apt-get exists. Never fails the build: it says why not, and the tests that
# need the tool then fail saying how to install it.
#   sh scripts/install-debian-tool.sh promtool prometheus        (promtool check|test rules)
#   sh scripts/install-debian-tool.sh chromium chromium          (the report's browser test)
#   sh scripts/install-debian-tool.sh systemd-analyze systemd    (the systemd unit's check)
# Debian's prometheus package (2.42) also ships the `prometheus` server; where systemd runs, its
# postinst starts the `prometheus` service (port 9090), as any install of that package does.
set -u
command=$1
package=$2

if command -v "$command" >/dev/null 2>&1; then
    echo "$command: $(command -v "$command")"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "$command: not installed, and not root: not installing Debian's $package package" \
         "(the tests that need it will fail)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "$command: not installed, and no apt-get here (the tests that need it will fail)"
    exit 0
fi

log=$(mktemp "${TMPDIR:-/tmp}/$command-install.XXXXXX")
install() {
    # another apt-get on the machine holds dpkg's lock for a while: wait for it rather than fail
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
        "$package" >>"$log" 2>&1
}
echo "$command: installing Debian's $package package (apt-get; log: $log)"
# A fresh machine has no package lists yet: update them when the first try fails.
if install || { apt-get -o DPkg::Lock::Timeout=600 update >>"$log" 2>&1 && install; }; then
    if command -v "$command" >/dev/null 2>&1; then
        echo "$command: $(command -v "$command")"
        rm -f "$log"
        exit 0
    fi
    echo "$command: the $package package installed no $command (the tests that need it will fail)"
else
    echo "$command: apt-get could not install $package (the tests that need it will fail):"
    tail -n 5 "$log" | sed 's/^/  /'
fi
exit 0
