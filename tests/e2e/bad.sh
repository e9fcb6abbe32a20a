#!/bin/bash
# bad.sh - every malformed datafile of tests/data/bad/datafile, mounted for
# real.  A header problem fails the mount: savefs exits 5 and prints
# "savefs: <message>" (the NAME.msg line).  A bad entry mounts: the tree is
# there, that one file (and any other view of the same entry) reads EIO
# ("Input/output error") while the others read, and /.savefs/log holds
# "read PATH: <message>".  Neither
# may crash the daemon or leave a sanitizer report.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
BAD="$SRC_ROOT/tests/data/bad/datafile"
[ -d "$BAD" ] || die "no $BAD"

for map in "$BAD"/*.map; do
	name=$(basename "$map" .map)
	msg=$(cat "$BAD/$name.msg")
	how=$(cat "$BAD/$name.how")
	cp "$map" "$TMP/$name.map"
	m="$TMP/mnt-$name"
	mkdir -p "$m"
	case "$how" in
	fails*)
		err="$TMP/$name.err"
		timeout 120 "$SAVEFS" -f "$TMP/$name.map" "$m" 2> "$err" < /dev/null
		rc=$?
		expect_eq "$name: mount exit code" 5 "$rc"
		expect_eq "$name: mount message" "savefs: $TMP/$name.map: $msg" "$(cat "$err")"
		san_check "savefs (mount of $name)" "$err"
		is_mounted "$m" && fail "$name: mounted although its header is bad"
		;;
	mounts*)
		# "mounts: PATH reads EIO ...", then "also: PATH2" lines: other
		# views of the same entry that read EIO too.
		file=$(sed -n '1s/^mounts: \(.*\) reads EIO.*/\1/p' <<< "$how")
		also=$(sed -n 's/^also: //p' <<< "$how")
		mount_sv "$TMP/$name.map" "$m" || continue
		for f in $file $also; do
			out=$(cat "$m/$f" 2>&1 > /dev/null)
			expect_eq "$name: cat $f" "cat: $m/$f: Input/output error" "$out"
		done
		check "$name: the log names the file and the reason" \
			grep -qF "read $file: $msg" "$m/.savefs/log"
		# Every other file reads.
		(cd "$m" && find data map -type f 2> /dev/null) | sort > "$TMP/files"
		while read -r f; do
			case " $file $also " in *" $f "*) continue ;; esac
			check "$name: $f still reads" cat "$m/$f"
		done < "$TMP/files" > /dev/null
		check "$name: header.json reads" cat "$m/header.json" > /dev/null
		umount_sv "$m"
		cmp -s "$map" "$TMP/$name.map" || fail "$name: the container was changed"
		;;
	*)
		fail "$name: unknown .how line: $how"
		;;
	esac
done
finish
