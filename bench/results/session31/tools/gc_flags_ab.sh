#!/bin/bash
# arms of V8 GC flags on the nodes only (NODE_V8_EXTRA, /tmp/m's patch), 200/s 20 s, trace-gc-nvp
cd /tmp/m
rounds=$1; shift
for r in $(seq 1 $rounds); do
  for arm in "$@"; do
    name=$(echo "$arm" | tr -d '-' | tr ',' '_'); [ -z "$name" ] && name=default
    NODE_V8_EXTRA="--trace-gc-nvp${arm:+,$arm}" deno task hookd bench --rates 200 --duration 20 --json > /tmp/opt/gcab/$name.$r.json 2> /tmp/opt/gcab/$name.$r.err
  done
done
