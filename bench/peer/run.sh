#!/bin/sh
# The PyTorch peer in its "tuned" setting: tcmalloc and passive OpenMP waits.
#   bench/peer/run.sh MODE ARGS...    (MODE: train-base, train-intrus, decode, decode-table, check)
# tcmalloc is optional (without it, glibc malloc); on Debian:
#   DEBIAN_FRONTEND=noninteractive apt-get install -y libgoogle-perftools4
# OMP_WAIT_POLICY=PASSIVE keeps PyTorch's OpenMP threads from spinning while OpenBLAS's
# own threads run the products (2 cores: spinning threads steal them).
# peer.py itself sets OPENBLAS_CORETYPE when OpenBLAS falls back to an old core, as the C
# benchmarks do (intrus_blas_restart_better); PEER_THREADS (default 2) sets the threads.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

if ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  echo "run.sh: /usr/bin/python3 cannot import torch: apt-get install python3-torch" >&2
  exit 1
fi

tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
if [ -e "$tcmalloc" ]; then
  LD_PRELOAD="$tcmalloc${LD_PRELOAD:+:$LD_PRELOAD}"
  export LD_PRELOAD
else
  echo "run.sh: $tcmalloc not found, running without tcmalloc" >&2
fi
OMP_WAIT_POLICY=PASSIVE
export OMP_WAIT_POLICY

exec /usr/bin/python3 "$here/peer.py" "$@"
