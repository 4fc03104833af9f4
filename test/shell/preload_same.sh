#!/bin/bash
# preload_same.sh - the semantics suite of preload_semantics.sh with both ends on one node:
# every scenario's transcripts against the kernel's, each connection on the same-node path
# (shared memory; PSP_STATS shm=).
PRELOAD_SAME_NODE=1 exec bash "$(dirname "$0")/preload_semantics.sh"
