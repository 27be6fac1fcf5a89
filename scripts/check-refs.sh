#!/usr/bin/env bash
# The repository stands on its own: no tracked source, script, page or document cites the product contract or
# tracker by number (the word SPEC or issue followed by a number: cite docs/protocol.md §x.y, or say the reason), and no relative path
# leaves the checkout for the documents that sat beside it (`../shared/…`). A `../shared` that stays inside the
# repository (mcp/shared/) is fine. test/fixtures holds third-party material verbatim and is not checked.
# Exit 1 listing each offending line.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)

mapfile -t files < <(git ls-files -- '*.ts' '*.js' '*.mjs' '*.md' '*.sh' '*.html' ':!:test/fixtures/**' ':!:node_modules/**')
status=0

# grep exits 1 when a batch has no match, so judge by the output, not the status.
hits=$(printf '%s\0' "${files[@]}" | xargs -0 grep -nE 'SPEC [0-9]|[Ii]ssue [0-9]+' -- || true)
if [ -n "$hits" ]; then
  printf '%s\n' "$hits" | sed 's/$/  <- cite docs\/protocol.md §x.y, or the reason, instead/' >&2
  status=1
fi

while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  while IFS= read -r path; do
    target=$(realpath -m "$(dirname "$file")/$path")
    case "$target/" in
      "$root"/*) ;;
      *)
        echo "$file:$line: $path leaves the repository" >&2
        status=1
        ;;
    esac
  done < <(grep -oE '(\.\./)+shared' <<< "$rest")
done < <(printf '%s\0' "${files[@]}" | xargs -0 grep -nE '\.\./shared' -- || true)

if [ "$status" -eq 0 ]; then echo "refs: ${#files[@]} files cite no contract section or issue number by name and stay inside the repository"; fi
exit "$status"
