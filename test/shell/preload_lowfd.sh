#!/bin/bash
# preload_lowfd.sh - the same-node semantics suite once more under ulimit -n 1024 (soft and
# hard, as many systems start a program), where the library's hidden descriptors lie at
# 768 and above, within the reach of a program that closes 3..1023 (closeall) and of its
# own descriptors: every scenario's transcripts against the kernel's, as preload_same.sh.
# many makes 300 connections here (PLSEM_MANY): 1000, with the kernel's 1003 descriptors,
# leave no room for the library's two to four per accelerated connection, and the library
# does not take back what it holds; past its share it keeps connections on TCP (reason
# limit), and tells an acceptor's connector at once.
# make check runs the scenarios where descriptors are made, copied, closed or inherited
# (the rest are the same code at any number); make soak (SOAK=1) runs all of them.
export PLSEM_MANY=300
if [[ ${SOAK:-0} != 1 && -z ${PRELOAD_SCENARIOS:-} ]]; then
    export PRELOAD_SCENARIOS="echo epoll dup many fork closeall inetd fork_both exec_rdp vfork spawn
        eplazy daemon threadfds closefrom epclose"
    export PRELOAD_ASYNC="echo fork_unread"
fi
ulimit -n 1024 || {
    echo "SKIP: preload semantics at ulimit -n 1024: the limit cannot be set"
    exit 0
}
PRELOAD_SAME_NODE=1 PRELOAD_NAME="preload same-node semantics at ulimit -n 1024" \
    exec bash "$(dirname "$0")/preload_semantics.sh"
