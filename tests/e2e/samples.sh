#!/bin/bash
# samples.sh - mounts every real map in ../shared/samples/teeworlds and
# checks the whole tree three ways:
#   - against its golden listing (tests/golden/datafile/<name>.tree: type,
#     stat size, sha256 and path of every node), computed from the mount
#     with find, stat and sha256sum;
#   - every items/ and data/ file against the independent Python decoder;
#   - `savefs ls -R`, `ls -l -R`, `extract` and `cat` against the mount.
# A browse must leave the container as it was.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
need_samples
shopt -s nullglob
maps=("$SAMPLES"/teeworlds/*.map)
[ "${#maps[@]}" -gt 0 ] || skip_samples "no $SAMPLES/teeworlds/*.map"

n=0
for src in "${maps[@]}"; do
	name=$(basename "$src" .map)
	d="$TMP/$name"
	mkdir -p -- "$d"
	cp -- "$src" "$d/c.map" && chmod u+w "$d/c.map" || die "cannot copy $src"
	m="$d/mnt"
	# Every other sample with a small cache and read-only, so reads that
	# evict and reads that hit are both exercised.
	n=$((n + 1))
	if [ $((n % 2)) -eq 0 ]; then
		mount_sv "$d/c.map" "$m" -o ro,cache=64K || continue
	else
		mount_sv "$d/c.map" "$m" || continue
	fi

	# The whole tree, twice (the second pass reads from the kernel's cache
	# and the daemon's cache).
	tree_listing "$m" > "$d/tree" || fail "$name: cannot list the mount"
	check_golden "$name" "$d/tree"
	tree_listing "$m" > "$d/tree2"
	expect_same_text "$name: a second listing of the mount differs from the first" \
		"$d/tree" "$d/tree2"

	# stat sizes are exact before a file is read: compare with the bytes.
	while read -r t size _ path; do
		[ "$t" = f ] || continue
		got=$(wc -c < "$m/$path")
		expect_eq "$name: $path: stat size vs bytes read" "$size" "$got"
	done < "$d/tree"

	check_decoder "$d/c.map" "$m"

	# The command line walks the same tree in the same order.
	(cd -- "$m" && find . -mindepth 1 -name '.*' -prune -o \
		\( -type d -printf '%P/\n' \) -o -printf '%P\n') > "$d/find.order"
	sv ls -R "$d/c.map" > "$d/ls.order" || fail "$name: savefs ls -R failed"
	expect_same_text "$name: savefs ls -R vs the mount's order (find)" \
		"$d/find.order" "$d/ls.order"
	(cd -- "$m" && find . -mindepth 1 -printf '%y %s %P\n' | grep -v '^d' |
		awk '{ print $2, $3 }' | sort -k 2) > "$d/find.sizes"
	sv ls -l -R -a "$d/c.map" > "$d/ls.long" || fail "$name: savefs ls -l -R -a failed"
	grep -v '^d' "$d/ls.long" | grep -v ' \.savefs/' | awk '{ print $2, $3 }' |
		sort -k 2 > "$d/ls.sizes"
	grep -v ' \.savefs/' "$d/find.sizes" > "$d/find.sizes2"
	expect_same_text "$name: savefs ls -l sizes vs stat in the mount" \
		"$d/find.sizes2" "$d/ls.sizes"
	grep -q ' \.savefs/info$' "$d/ls.long" ||
		fail "$name: savefs ls -a does not show .savefs/info"
	# Every file through `savefs extract`; `savefs cat` on header.json and
	# the first and last file of each directory (one process per file is
	# slow under the sanitizers).
	sv extract "$d/c.map" "$d/extract" || fail "$name: savefs extract failed"
	CHECKS=$((CHECKS + 1))
	diff -r --exclude=.savefs "$m" "$d/extract" > "$d/diff.out" 2>&1 ||
		{ fail "$name: savefs extract vs the mount (diff -r):"; head -n 20 "$d/diff.out"; }
	awk '$1 == "f" { p = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", p); n = p; sub(/\/[^\/]*$/, "", n)
	                 if (!(n in first)) first[n] = p; last[n] = p }
	     END { for (n in first) print first[n]; for (n in last) print last[n] }' "$d/tree" |
		sort -u > "$d/cat.list"
	while read -r path; do
		sv cat "$d/c.map" "$path" > "$d/cat.out" ||
			fail "$name: savefs cat $path failed"
		expect_same_file "$name: savefs cat $path vs the mount" "$m/$path" "$d/cat.out"
	done < "$d/cat.list"
	sv ls "$d/c.map" items/no-such-dir > /dev/null 2>&1
	expect_eq "$name: savefs ls of a missing path: exit code" 7 "$?"

	# The hidden directory.
	grep -q '"format": "datafile"' "$m/.savefs/info" ||
		fail "$name: .savefs/info does not say \"format\": \"datafile\""
	check "$name: .savefs/log is readable" cat "$m/.savefs/log" > /dev/null
	ls "$m" | grep -q savefs && fail "$name: plain ls shows .savefs"

	umount_sv "$m"
	check "$name: the container is unchanged after a browse" cmp -s "$src" "$d/c.map"
done
finish
