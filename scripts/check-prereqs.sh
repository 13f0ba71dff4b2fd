#!/bin/sh
# Checks the two things the project cannot install itself: Python 3.11+ and Java 17+.
python_bin=${1:-python3}
if ! "$python_bin" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "quotaplane needs Python 3.11 or newer as '$python_bin' (found: $("$python_bin" --version 2>&1 || echo none))." >&2
  echo "Install it (Debian/Ubuntu: apt-get install python3 python3-venv), or run: make PYTHON=/path/to/python3.11 ..." >&2
  exit 1
fi
if ! command -v java >/dev/null 2>&1; then
  echo "quotaplane runs Apache Spark, which needs Java 17 or newer, and no 'java' is on PATH." >&2
  echo "Install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17)" >&2
  echo "or set JAVA_HOME and put \$JAVA_HOME/bin on PATH." >&2
  exit 1
fi
java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
if [ -n "$java_major" ] && [ "$java_major" -lt 17 ]; then
  echo "quotaplane needs Java 17 or newer for Spark 4; 'java' on PATH is version $java_major." >&2
  echo "Install openjdk-17-jre-headless (or newer) and put it first on PATH." >&2
  exit 1
fi
