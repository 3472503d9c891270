#!/bin/sh
#
# Runs gda_ft_perf's server and client on this machine, each with two
# software HCAs (server s0/s1 on 127.0.0.1/.2, client c0/c1 on
# 127.0.0.3/.4), and prints both outputs, the server's after the client's.
# Exits 0 when both pass.
#
#   contrib/gda_ft-perf-local.sh -t put_bw -s 4096 -n 20000 -T 2 -c 2 --fault=400
#
# GDA_FT_PERF: the program (default: the build tree's src/tools/gda_ft_perf).
# GDA_FT_PERF_PORT: UDP port of the soft HCAs (default: from the shell's
# pid). The server listens on a TCP port the kernel picks and prints; the
# client is started once that line is there.
# GDA_FT_PERF_SERVER_ARGS: options of the server alone (e.g. --cpu); it takes
# the test's options from the client.
# UCX_GDA_FT_DEADLINE defaults to 100ms here (the soft HCA's default is 1 s),
# UCX_GDA_FT_RECOVERY_WINDOW to 50ms.
#
set -e

script_dir=$(cd "$(dirname "$0")" && pwd)
perf=${GDA_FT_PERF:-$script_dir/../build/src/tools/gda_ft_perf}
port=${GDA_FT_PERF_PORT:-$((21000 + $$ % 20000))}
server_log=$(mktemp)
trap 'rm -f "$server_log"' EXIT

export UCX_TLS=${UCX_TLS:-gda_ft,tcp}
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-all}
export UCX_GDA_FT_DEADLINE=${UCX_GDA_FT_DEADLINE:-100ms}
export UCX_GDA_FT_RECOVERY_WINDOW=${UCX_GDA_FT_RECOVERY_WINDOW:-50ms}
export UCX_GDA_FT_SOFT_CTL_DIR=${UCX_GDA_FT_SOFT_CTL_DIR-}
unset UCX_GDA_FT_SOFT_FAULTS

UCX_GDA_FT_SOFT_DEVICES=s0=127.0.0.1:$port,s1=127.0.0.2:$port \
    "$perf" -p 0 ${GDA_FT_PERF_SERVER_ARGS:-} >"$server_log" 2>&1 &
server=$!

# the server's TCP port, once it listens (it may load a GPU first)
tcp_port=
waited=0
while [ -z "$tcp_port" ] && kill -0 $server 2>/dev/null &&
      [ $waited -lt 1200 ]; do
    tcp_port=$(sed -n 's/^Waiting for connection on port \([0-9]*\).*/\1/p' \
               "$server_log")
    [ -n "$tcp_port" ] || { sleep 0.1; waited=$((waited + 1)); }
done

set +e
if [ -n "$tcp_port" ]; then
    UCX_GDA_FT_SOFT_DEVICES=c0=127.0.0.3:$port,c1=127.0.0.4:$port \
        "$perf" -p "$tcp_port" "$@" 127.0.0.1
    client_rc=$?
else
    echo "gda_ft-perf-local.sh: the server did not listen (see its output)"
    kill $server 2>/dev/null
    client_rc=1
fi
wait $server
server_rc=$?
set -e

echo "--- server"
cat "$server_log"
echo "exit: client $client_rc, server $server_rc"
[ $client_rc -eq 0 ] && [ $server_rc -eq 0 ]
