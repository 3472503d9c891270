#!/bin/sh
# Regenerates the Autotools build (configure, Makefile.in).
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf -fi
