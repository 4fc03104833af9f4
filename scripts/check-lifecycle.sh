#!/bin/bash
# check-lifecycle.sh - the preload library's lifecycle of a connection stays one state
# machine (preload/lifecycle.c; docs/preload-design.md, "The lifecycle"):
#  1. nothing in preload/ but lifecycle.c writes a connection's state (struct conn's st):
#     no assignment to ->st or .st, no atomic store, exchange or read-modify-write on it;
#  2. the table of transitions in lifecycle.c's comment is the one in
#     docs/preload-design.md, row for row (from, to, event);
#  3. the code's table (lifecycle.c's allowed[]) allows exactly the pairs those rows name.
# run-tests.sh runs it with the style checks (STEPS=g); it prints what differs and exits 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LC=preload/lifecycle.c
DOC=docs/preload-design.md
bad=0

# 1. writes of the state outside lifecycle.c (comments are not code: /* ... */ and // cut)
assign='(->|\.)st[[:space:]]*([-+*/%&|^]?=[^=]|\+\+|--)'
atomic='(atomic|__atomic)_(store|exchange|compare_exchange|fetch)[a-z_]*[[:space:]]*\([[:space:]]*&[^,]*(->|\.)st[[:space:]]*,'
for f in preload/*.c preload/*.h; do
    [[ $f == "$LC" ]] && continue
    hits=$(sed -e 's|//.*||' -e 's|/\*.*\*/||g' "$f" | grep -nE "$assign|$atomic" || true)
    if [[ -n $hits ]]; then
        echo "check-lifecycle: $f writes a connection's state outside conn_enter (lifecycle.c):"
        sed 's/^/    /' <<<"$hits"
        bad=1
    fi
done

# same WHAT LEFT RIGHT A B: the lists A and B (lines) are the same, else say so; an empty A
# is a table not found
same() {
    if [[ -z $4 ]]; then
        echo "check-lifecycle: no $1 in $2"
        bad=1
    elif [[ $4 != "$5" ]]; then
        echo "check-lifecycle: the $1 of $2 (<) and of $3 (>) differ:"
        diff <(echo "$4") <(echo "$5") | sed 's/^/    /' || true
        bad=1
    fi
}

# 2. the rows, "FROM TO EVENT" with single blanks, in order
rows_c=$(sed -nE 's/^ \*   ([A-Z]+) +-> ([A-Z]+) +(.*)$/\1 \2 \3/p' "$LC")
rows_d=$(sed -nE 's/^\| *([A-Z]+) *\| *([A-Z]+) *\| *(.*[^ ]) *\|$/\1 \2 \3/p' "$DOC" |
    sed -E 's/`//g')
same "transitions" "$LC's comment" "$DOC" "$rows_c" "$rows_d"

# 3. the code's table against the rows' pairs
pairs_c=$(awk '{ print $1, $2 }' <<<"$rows_c" | sort -u)
pairs_t=$(sed -n '/^static const unsigned allowed\[/,/^};/p' "$LC" | tr -d '\n' |
    grep -oE '\[CS_[A-Z]+\] = (TO\(CS_[A-Z]+\)[ |]*)+' |
    awk '{ from = $1; gsub(/[][]|CS_/, "", from)
           n = split($0, t, /TO\(CS_/)
           for (i = 2; i <= n; i++) { to = t[i]; sub(/\).*/, "", to); print from, to } }' |
    sort -u)
same "pairs" "$LC's allowed[]" "$LC's comment" "$pairs_t" "$pairs_c"

((bad == 0)) && echo "check-lifecycle: the state is written in $LC only; its table agrees with $DOC"
exit "$bad"
