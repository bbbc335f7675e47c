#!/usr/bin/env bash
# Fails when a Rust source file grows past the size the project keeps to (STYLE.md):
# a file that long should be split by concept.
set -euo pipefail
limit=${1:-800}
cd "$(git rev-parse --show-toplevel)"
status=0
while IFS= read -r file; do
    lines=$(wc -l < "$file")
    if [ "$lines" -gt "$limit" ]; then
        echo "$file has $lines lines (limit $limit): split it by concept" >&2
        status=1
    fi
done < <(git ls-files '*.rs')
exit $status
