#!/bin/bash
# cli.sh - the command line's contract: one exit code per failure class,
# for the mount and for ls/cat/extract/info, with their one-line messages;
# --help, --version, --formats; and the FUSE-free verbs against a mount of
# the same container (same listing, same bytes).

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
[ -x "$MKDATAFILE" ] || die "MKDATAFILE=$MKDATAFILE is not an executable (build first)"
c="$TMP/c.map"
"$MKDATAFILE" gen "$c" --data 12 --payload 40K --items 3 --dup-uuid --seed 3 || die "mkdatafile"
mkdir -p "$TMP/m" "$TMP/empty"
printf 'not a save\n' > "$TMP/text"
printf 'DATA\005\0\0\0' > "$TMP/v5.map"; head -c 40 /dev/zero >> "$TMP/v5.map"

S=$SAVEFS
expect_exit "no arguments" 2 "savefs: need LOCATION and MOUNTPOINT (see savefs --help)" "$S"
# The commands take -o as the mount does: split at commas, anywhere among
# their arguments, or before the command.
expect_exit "the commands split -o at commas" 2 \
	"savefs: -o s3_part_size=1M: a size from 5M to 5G (an S3 multipart upload's part) (see savefs --help)" \
	"$S" ls -o s3_part_size=1M,noindex "$c"
expect_exit "a comma kept in a value with \\," 2 \
	"savefs: -o s3_part_size=1M,5: a size from 5M to 5G (an S3 multipart upload's part) (see savefs --help)" \
	"$S" ls -o 's3_part_size=1M\,5' "$c"
expect_exit "-o after -l and -R" 0 - "$S" ls -l -R -o noindex "$c" items
expect_exit "-o after the location" 0 - "$S" ls "$c" -o noindex,s3_region=x items
expect_exit "-o before the command" 0 - "$S" -o noindex info "$c"
expect_eq "-o before the command: the command's output" "datafile" \
	"$("$S" -o noindex info "$c" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["format"])')"
expect_exit "bad size option" 2 "savefs: -o cache=lots: not a size (try 64M)" \
	"$S" -o cache=lots "$c" "$TMP/m"
expect_exit "bad readahead option" 2 "savefs: -o readahead=x: a number of files, 0 to 64" \
	"$S" -o readahead=x "$c" "$TMP/m"
expect_exit "missing container" 3 "savefs: $TMP/nope.map: No such file or directory" \
	"$S" "$TMP/nope.map" "$TMP/m"
expect_exit "a mistyped command" 3 \
	"savefs: bogus: neither a command (ls, cat, extract, info) nor a container: No such file or directory" \
	"$S" bogus "$TMP/m"
expect_exit "unknown format" 4 "savefs: $TMP/text: not a container savefs knows (see --formats)" \
	"$S" "$TMP/text" "$TMP/m"
expect_exit "unknown format name" 2 "savefs: unknown format name \"zip\" (see --formats)" \
	"$S" -o format=zip "$c" "$TMP/m"
expect_exit "unsupported version" 5 \
	"savefs: $TMP/v5.map: datafile: byte 4: version 5 is not supported (only 3 and 4)" \
	"$S" "$TMP/v5.map" "$TMP/m"
expect_exit "unknown mount option" 2 "savefs: unknown option(s): \`-o bogus' (see savefs --help)" \
	"$S" -o bogus "$c" "$TMP/m"
expect_exit "unknown short option" 2 "savefs: unknown option(s): \`-x' (see savefs --help)" \
	"$S" -x "$c" "$TMP/m"
expect_exit "misspelled long option" 2 \
	"savefs: unknown option(s): \`--forground' (see savefs --help)" "$S" --forground "$c" "$TMP/m"
expect_exit "an argument too many" 2 \
	"savefs: too many arguments: \`extra' after LOCATION and MOUNTPOINT (see savefs --help)" \
	"$S" "$c" "$TMP/m" extra
expect_exit "a bad value of a FUSE option" 2 \
	"savefs: invalid parameter in option \`max_threads=x' (see savefs --help)" \
	"$S" -o max_threads=x "$c" "$TMP/m"
expect_exit "missing mount point" 6 "savefs: cannot mount on $TMP/none: No such file or directory" \
	"$S" "$c" "$TMP/none"
expect_exit "mount point is a file" 6 "savefs: cannot mount on $TMP/text: not a directory" \
	"$S" "$c" "$TMP/text"
expect_exit "ls of a missing path" 7 "savefs: items/9-nine: No such file or directory" \
	"$S" ls "$c" items/9-nine
expect_exit "cat of a directory" 7 "savefs: data: is a directory" "$S" cat "$c" data
expect_exit "cat without a path" 2 "savefs: wrong number of arguments (see savefs --help)" \
	"$S" cat "$c"
expect_exit "ls with a bad flag" 2 "savefs: ls takes -l, -R, -a and -o OPT (see savefs --help)" \
	"$S" ls -x "$c"
expect_exit "info of a text file" 4 "-" "$S" info "$TMP/text"

check "--help names every exit code" sh -c "'$S' --help | grep -c '^  [0-7]  ' | grep -qx 8"
check "--version" sh -c "'$S' --version | grep -Eqx 'savefs [0-9]+\.[0-9]+\.[0-9]+'"
expect_eq "--formats" "datafile   Teeworlds/DDNet map datafile (.map), versions 3 and 4
doodle     Sketchy Maze level, doodad or levelpack (.level, .doodad, .levelpack: JSON, gzip JSON or zip)
nethack    NetHack 4 game log (.nhgame), followed live; diffs 4.3-beta1 to 4.3.0
btreedb5   Starbound BTreeDB5 database (.world, .shipworld, universe.chunks)
sbvj01     Starbound versioned JSON file (.player, universe.dat, .metadata)
recording  chunked replay recording, version 4 (.hcrp, or a segmented directory)" \
	"$("$S" --formats)"

# The FUSE-free verbs walk the mount's tree.
mount_sv "$c" "$TMP/m" -o ro || die "mount failed"
expect_eq "ls -R lists what find lists" \
	"$(cd "$TMP/m" && find . -mindepth 1 -not -path './.savefs*' | sed 's|^\./||' | sort)" \
	"$(sv ls -R "$c" | sed 's|/$||' | sort)"
expect_eq "ls -a shows .savefs" ".savefs data header.json items map" "$(sv ls -a "$c" | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "ls of a type directory" "65534.bin 65534~2.bin" \
	"$(sv ls "$c" items/65535-uuid-index | tr '\n' ' ' | sed 's/ $//')"
expect_eq "ls -l of one file" "-r--r--r--           16 65534~2.bin" \
	"$(sv ls -l "$c" items/65535-uuid-index | tail -1)"
for f in header.json data/00000.bin data/00011.bin items/65535-uuid-index/65534~2.bin; do
	sv cat "$c" "$f" > "$TMP/catout"
	expect_same_file "savefs cat $f = the mount's bytes" "$TMP/m/$f" "$TMP/catout"
done
sv extract "$c" "$TMP/x" 2> "$TMP/extract.err"
expect_eq "extract prints nothing when stderr is not a terminal" "" "$(cat "$TMP/extract.err")"
check "extract = the mount" diff -r --exclude=.savefs "$TMP/m" "$TMP/x"
# On a terminal (script(1) gives it one) extract shows its progress.
if command -v script > /dev/null; then
	script -qec "'$S' extract '$c' '$TMP/x2'" /dev/null > "$TMP/tty.out" 2>&1
	n=$(cd "$TMP/x2" && find . -type f | wc -l)
	check "extract on a terminal shows the last count" \
		grep -q "extract: $n/$n files" "$TMP/tty.out"
fi
# extract writes into a new or empty directory; into another only with
# --force.  Its files have the mount's times.
expect_exit "extract into a non-empty directory" 1 \
	"savefs: $TMP/x: not empty: extract writes into an empty (or new) directory, or over what is there with --force" \
	"$S" extract "$c" "$TMP/x"
check "extract --force writes over it" sv extract --force "$c" "$TMP/x"
check "extract --force = the mount" diff -r --exclude=.savefs "$TMP/m" "$TMP/x"
expect_eq "an extracted file has the mount's mtime" "$(stat -c %.9Y "$TMP/m/data/00003.bin")" \
	"$(stat -c %.9Y "$TMP/x/data/00003.bin")"
expect_eq "an extracted directory has the mount's mtime" "$(stat -c %.9Y "$TMP/m/items")" \
	"$(stat -c %.9Y "$TMP/x/items")"
mkdir -p "$TMP/emptyx"
check "extract into an empty directory" sv extract "$c" "$TMP/emptyx"
sv info "$c" > "$TMP/info.json"
check "info is the format's JSON" grep -q '"format": "datafile"' "$TMP/info.json"
check "info counts the data items" grep -q '"data": 12,' "$TMP/info.json"
umount_sv "$TMP/m"

# A refused rename says why in the log (mv itself shows only EPERM).
cp "$c" "$TMP/rw.map"
mount_sv "$TMP/rw.map" "$TMP/m" || die "mount failed"
M=$TMP/m
write_fails "mv of a container entry" "Operation not permitted" \
	mv "$M/data/00000.bin" "$M/data/00099.bin"
log_has "the refused rename" \
	"refused rename data/00000.bin -> data/00099.bin: entries of the container cannot be renamed; copy instead"
umount_sv "$TMP/m"

# The test library fails a script that runs a command that does not exist
# (it used to print an error and go on, the checks built on it passing).
out=$(TMPDIR=$TMP bash -c '. "$1/lib.sh"; x=$(no_such_helper_here); check "an empty result" test -z "$x"; finish' \
	_ "$E2E_DIR" 2>&1)
expect_eq "a script running a command that does not exist: its status" 1 "$?"
check "... and it says which" grep -q "FAIL: no such command: no_such_helper_here" <<< "$out"
finish
