#!/bin/sh
# Builds the peer fiber benchmarks with the system compiler into /tmp and
# runs them. Each prints one line per row: `<row> <median ns> <min> <max>`
# (ns per operation over 5 repetitions, after one warm-up), with the
# iteration counts of `threadwire bench threads`' fiber column.
#
# Needs: g++, libboost-fiber-dev (apt-get install -y libboost-fiber-dev).
# Argobots: Debian has no package (apt-cache search argobots finds none),
# so there is no Argobots benchmark here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${TMPDIR:-/tmp}/threadwire-bench-peers
mkdir -p "$out"

g++ -O2 -std=c++17 -o "$out/boost_fiber" "$here/boost_fiber.cpp" \
    -lboost_fiber -lboost_context

echo "# Boost.Fiber $(dpkg-query -W -f '${Version}' libboost-fiber-dev 2>/dev/null || echo '?')," \
     "$(g++ --version | head -n 1)"
"$out/boost_fiber" "$@"
