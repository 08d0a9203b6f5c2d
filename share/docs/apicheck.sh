#!/usr/bin/env bash
# Fails (exit 1, with the differences) when the committed API reference docs/api/ is not what `make docs` generates
# from the manual pages in src/ now: a function added, removed or documented anew without `make docs` and a commit.
# The pages are generated into a temporary copy of the tree (symbolic links to everything but docs/), so that their
# relative links are those of docs/api/, and compared file by file; nothing in the tree is written.
root=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
for entry in "$root"/*; do
  [[ "$(basename "$entry")" == docs ]] || ln -s "$entry" "$tmp/$(basename "$entry")"
done
mkdir -p "$tmp/docs/api"
python3 "$root/share/docs/manpages.py" --root "$tmp" --out "$tmp/docs/api" > /dev/null || exit 1
if ! diff -r -u "$root/docs/api" "$tmp/docs/api"; then
  echo "docs/api differs from what 'make docs' generates: run make docs and commit docs/api"
  exit 1
fi
echo "docs/api: $(ls "$root/docs/api" | wc -l) pages, identical to what make docs generates"
