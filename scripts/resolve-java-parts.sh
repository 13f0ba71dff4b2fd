#!/bin/sh
# Resolve the Java parts the tests and `make kafka` start (each `deploy/<part>/pom.xml`, versions
# pinned there) from Maven Central into Maven's local repository (~/.m2, outside the checkout), and
# write each part's class path to $QUOTAPLANE_CACHE/java/<part>/classpath.txt (default cache:
# ~/.cache/quotaplane). A part whose pom is unchanged and whose jars are all present is not resolved
# again, so a later run needs no network. Usage: resolve-java-parts.sh [PART ...] (default: all).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${QUOTAPLANE_CACHE:-$HOME/.cache/quotaplane}/java
if ! command -v mvn >/dev/null 2>&1; then
    echo "java parts: Maven ('mvn') is not on PATH; the tests start real Kafka and Pulsar from their" \
         "Maven artifacts (Debian/Ubuntu: apt-get install maven)" >&2
    exit 1
fi
if [ $# -eq 0 ]; then
    set -- $(cd "$top/deploy" && for p in */pom.xml; do [ -f "$p" ] && dirname "$p"; done)
fi
for part in "$@"; do
    pom="$top/deploy/$part/pom.xml"
    [ -f "$pom" ] || { echo "java parts: no $pom" >&2; exit 1; }
    out="$cache/$part"
    sum=$(sha256sum "$pom" | cut -d' ' -f1)
    if [ -f "$out/classpath.txt" ] && [ "$(cat "$out/pom.sha256" 2>/dev/null)" = "$sum" ] \
        && tr ':' '\n' < "$out/classpath.txt" | while read -r jar; do [ -f "$jar" ] || exit 1; done; then
        echo "java parts: $part up to date ($out/classpath.txt)"
        continue
    fi
    mkdir -p "$out"
    log="$out/resolve.log"
    echo "java parts: resolving $part from Maven Central (log: $log)"
    if ! mvn -B -f "$pom" dependency:build-classpath -Dmdep.outputFile="$out/classpath.tmp" >"$log" 2>&1; then
        echo "java parts: Maven could not resolve $part:" >&2
        grep -E 'ERROR' "$log" | head -n 5 | sed 's/^/  /' >&2
        exit 1
    fi
    mv "$out/classpath.tmp" "$out/classpath.txt"
    echo "$sum" > "$out/pom.sha256"
done
