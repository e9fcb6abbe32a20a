#!/bin/bash
# install.sh - `meson install` into a DESTDIR puts the savefs binary and
# its man page savefs(1) in place, and the man page documents every option
# and exit code `savefs --help` lists; bash completion (commands, -o keys,
# paths inside a container); the shared-mime-info package, by which
# xdg-mime names each generated container by its magic bytes, with or
# without its extension; the .desktop entry for those types, and
# savefs-open, which mounts a container under $XDG_RUNTIME_DIR/savefs/.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_python
[ -n "${BUILD_ROOT:-}" ] || die "BUILD_ROOT is not set (meson sets it)"
dest=$TMP/dest
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$dest" > "$TMP/install.log" 2>&1 ||
	die "meson install failed: $(cat "$TMP/install.log")"
prefix=$(meson introspect "$BUILD_ROOT" --buildoptions |
	"$PYTHON" -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
mandir=$(meson introspect "$BUILD_ROOT" --buildoptions |
	"$PYTHON" -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "mandir"))')
bin="$dest$prefix/bin/savefs"
man="$dest$prefix/$mandir/man1/savefs.1"
check "the binary is installed at $bin" test -x "$bin"
check "the man page is installed at $man" test -f "$man"
expect_eq "the installed binary runs" "savefs $("$SAVEFS" --version | cut -d' ' -f2)" "$("$bin" --version)"
check "the installed man page is the one in the tree" cmp -s "$SRC_ROOT/doc/savefs.1" "$man"
share=$dest$prefix/share
comp=$share/bash-completion/completions/savefs
check "the man page, --help and the completion: the same options, commands, and every variable read" \
	"$PYTHON" "$SRC_ROOT/tests/tools/checkman.py" "$bin" "$man" "$comp" "$SRC_ROOT"
if command -v man > /dev/null; then
	check "man renders the page" sh -c "MANWIDTH=80 man -l '$man' > '$TMP/man.txt' 2> '$TMP/man.err'"
	check "the rendered page has no warnings" test ! -s "$TMP/man.err"
fi
# ---- the thumbnailer ----
check "the thumbnailer is installed" test -x "$dest$prefix/bin/savefs-thumbnailer"
check "its entry is installed under share/thumbnailers" \
	cmp -s "$SRC_ROOT/data/savefs.thumbnailer" "$share/thumbnailers/savefs.thumbnailer"
for t in $(sed -n 's/^MimeType=//p' "$share/thumbnailers/savefs.thumbnailer" | tr ';' ' '); do
	check "the thumbnailer's type $t is one savefs installs" \
		grep -q "mime-type type=\"$t\"" "$SRC_ROOT/data/savefs.xml"
done
mkdir -p "$TMP/th"
"$MKDATAFILE" map "$TMP/th/a.map" --size 100x50 --seed 1 > /dev/null
check "the installed thumbnailer makes a map's" "$dest$prefix/bin/savefs-thumbnailer" -s 128 \
	"$TMP/th/a.map" "$TMP/th/a.png"
expect_eq "a 100 x 50 game layer fits 128 as it is" "100 50" \
	"$("$PYTHON" "$SRC_ROOT/tests/tools/pngread.py" "$TMP/th/a.png" | cut -d' ' -f1-2)"
# ---- bash completion ----
check "the bash completion is installed at $comp" test -f "$comp"
complete_words()
{
	bash -c 'PATH=$1:$PATH; . "$2"; shift 2; cd "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
		_savefs; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
		_ "$(dirname "$SAVEFS")" "$comp" "$TMP/cw" "$@"
}
mkdir -p "$TMP/cw"
"$MKDATAFILE" map "$TMP/cw/c.map" --seed 1
expect_eq "completion: the commands, and containers to mount" \
	"c.map cat diff extract info ls mounts umount " "$(complete_words savefs "")"
expect_eq "completion: diff's options" "--name-only --stat " "$(complete_words savefs diff --)"
expect_eq "completion: diff's two locations" "c.map " "$(complete_words savefs diff c.map c)"
expect_eq "completion: -o keys" "cache= clone_fd " "$(complete_words savefs -o c)"
expect_eq "completion: the S3 keys" "s3_endpoint= s3_part_size= s3_path_style= s3_profile= s3_region= " \
	"$(complete_words savefs -o s3_)"
expect_eq "completion: keys after others" "ro,max_idle_threads= ro,max_open= ro,max_threads= ro,maxdecode= ro,maxedit= " \
	"$(complete_words savefs -o ro,m)"
expect_eq "completion: noindex, and the FUSE keys --help names" "nodev noexec noindex nosuid " \
	"$(complete_words savefs -o no)"
expect_eq "completion: -o s3_path_style= values" "s3_path_style=0 s3_path_style=1 " \
	"$(complete_words savefs -o s3_path_style=)"
mkdir -p "$TMP/home/.aws"
printf '[default]\naws_access_key_id = a\n[work]\naws_access_key_id = b\n' > "$TMP/home/.aws/credentials"
printf '[profile play]\nregion = eu-west-1\n[default]\nregion = us-east-1\n' > "$TMP/home/.aws/config"
expect_eq "completion: -o s3_profile= from the AWS files" \
	"s3_profile=default s3_profile=play s3_profile=work " \
	"$(HOME=$TMP/home complete_words savefs -o s3_profile=)"
expect_eq "completion: -o format= from --formats" "format=datafile " \
	"$(complete_words savefs -o format=da)"
expect_eq "completion: umount's option" "--all " "$(complete_words savefs umount -)"
expect_eq "completion: mounts takes nothing (an empty reply)" " " "$(complete_words savefs mounts "")"
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	cm=$(realpath -- "$TMP/cw")/mnt
	mount_sv "$TMP/cw/c.map" "$cm" || die "cannot mount c.map"
	expect_eq "completion: umount's mount points (from savefs mounts)" "$cm " \
		"$(complete_words savefs umount "${cm%nt}")"
	umount_sv "$cm"
fi
expect_eq "completion: -o events= values" "events=builtin events=parkour " \
	"$(complete_words savefs -o events=)"
expect_eq "completion: a path inside a container" "items/ " \
	"$(complete_words savefs cat c.map it)"
expect_eq "completion: a container by its extension, and a command" "c.map cat " \
	"$(complete_words savefs c)"

# ---- shared-mime-info, the .desktop entry, savefs-open ----
if command -v update-mime-database > /dev/null && command -v xdg-mime > /dev/null &&
	command -v mimetype > /dev/null; then
	check "the MIME package is installed" test -f "$share/mime/packages/savefs.xml"
	check "update-mime-database reads it" update-mime-database "$share/mime"
	mk=$TMP/mime
	mkdir -p "$mk"
	: "${MKSBDB:=$SRC_ROOT/build/tests/mksbdb}"
	"$MKSBDB" world "$mk/a.world" -c 1 && "$MKSBDB" sbvj01 "$mk/a.player"
	"$MKDATAFILE" map "$mk/a.map" --seed 1
	"$MKRECORDING" compacted "$mk/a.hcrp" -n 100 -e 3 -s 3 -z 3
	"$MKNHGAME" "$mk/a.nhgame" --turns 10 > /dev/null
	"$MKDOODLE" level "$mk/z.level" --container zip > /dev/null
	"$MKDOODLE" level "$mk/j.level" --container json > /dev/null
	"$MKDOODLE" doodad "$mk/d.doodad" > /dev/null
	"$MKDOODLE" pack "$mk/p.levelpack" "$mk/z.level" > /dev/null
	for f in a.world:starbound-btreedb a.player:starbound-versioned-json a.map:teeworlds-map \
		a.hcrp:hollowcube-recording a.nhgame:nethack4-game z.level:sketchymaze-level \
		j.level:sketchymaze-level d.doodad:sketchymaze-doodad p.levelpack:sketchymaze-levelpack; do
		file=${f%%:*} want=application/x-${f#*:}
		expect_eq "xdg-mime names $file" "$want" \
			"$(XDG_DATA_DIRS="$share:/usr/share" xdg-mime query filetype "$mk/$file")"
		# Without its extension, by its magic bytes alone (a drawing's
		# kind, level or doodad, is in its name only).
		g=noext-${file%%.*}-${file#*.}
		cp "$mk/$file" "$mk/$g"
		case $want in *-level | *-doodad) want=application/x-sketchymaze-drawing ;; esac
		expect_eq "xdg-mime names $g" "$want" \
			"$(XDG_DATA_DIRS="$share:/usr/share" xdg-mime query filetype "$mk/$g")"
	done
	# A ship from before Starbound 1.0 (SBBF03) has a ship's name, and is
	# no container savefs reads: not named one.
	{ printf 'SBBF03'; head -c 600 /dev/zero; } > "$mk/old.shipworld"
	check "a pre-1.0 .shipworld (SBBF03) is not named a Starbound database" sh -c \
		"XDG_DATA_DIRS='$share:/usr/share' xdg-mime query filetype '$mk/old.shipworld' | grep -qv starbound"
	cp "$mk/a.world" "$mk/a.shipworld"
	expect_eq "a 1.0 .shipworld (BTreeDB5) is, by its magic" application/x-starbound-btreedb \
		"$(XDG_DATA_DIRS="$share:/usr/share" xdg-mime query filetype "$mk/a.shipworld")"
	printf '{"order": [], "chatHistory": []}\n' > "$mk/metadata"
	check "a plain JSON file is not named a level" sh -c "XDG_DATA_DIRS='$share:/usr/share' \
		xdg-mime query filetype '$mk/metadata' | grep -qv sketchymaze"
	desk=$share/applications/savefs-open.desktop
	check "the .desktop entry is installed" test -f "$desk"
	expect_eq "the .desktop entry takes every type of the MIME package" \
		"$(grep -o 'mime-type type="[^"]*"' "$share/mime/packages/savefs.xml" |
			sed 's/mime-type type="//; s/"$//' | sort | tr '\n' ';')" \
		"$(sed -n 's/^MimeType=//p' "$desk" | tr ';' '\n' | grep . | sort | tr '\n' ';')"
	expect_eq "the .desktop entry runs savefs-open" "Exec=savefs-open %f" "$(grep '^Exec=' "$desk")"
	if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
		open=$dest$prefix/bin/savefs-open
		sopen() { PATH=$(dirname "$SAVEFS"):$PATH SAVEFS_OPEN_NO_BROWSER=1 "$open" "$@"; }
		export XDG_RUNTIME_DIR=$TMP/run
		d1=$(sopen "$mk/a.map")
		expect_eq "savefs-open mounts under \$XDG_RUNTIME_DIR/savefs/" "$TMP/run/savefs/a.map" "$d1"
		check "the container is mounted there" test -f "$d1/header.json"
		d2=$(sopen "$mk/a.map")
		expect_eq "a second open finds the mount" "$d1" "$d2"
		expect_eq "mounted once" 1 "$(findmnt -rn -o TARGET -t fuse.savefs | grep -cx "$d1")"
		# Two saves of one name (a world and its backup): two mounts, each
		# of its own file; a second open of either finds its own.
		mkdir -p "$mk/dA" "$mk/dB"
		"$MKDATAFILE" map "$mk/dA/universe.map" --seed 1
		"$MKDATAFILE" map "$mk/dB/universe.map" --seed 2
		a1=$(sopen "$mk/dA/universe.map")
		b1=$(sopen "$mk/dB/universe.map")
		expect_eq "the first of two names mounts as the name" "$TMP/run/savefs/universe.map" "$a1"
		expect_eq "the second of two names mounts beside it" "$TMP/run/savefs/universe.map (2)" "$b1"
		expect_eq "each mount is of its own file" "$mk/dA/universe.map $mk/dB/universe.map" \
			"$(findmnt -n -o SOURCE --mountpoint "$a1") $(findmnt -n -o SOURCE --mountpoint "$b1")"
		expect_eq "the second mount shows the second file" "$mk/dB/universe.map" \
			"$(json_field "$b1/.savefs/info" container)"
		expect_eq "the first mount shows the first file" "$mk/dA/universe.map" \
			"$(json_field "$a1/.savefs/info" container)"
		expect_eq "a second open of the backup finds the backup's mount" "$b1" "$(cd "$mk/dB" && sopen universe.map)"
		expect_eq "a second open of the first finds the first's mount" "$a1" "$(sopen "$mk/dA/../dA/universe.map")"
		# A name with a space, opened twice.
		cp "$mk/a.map" "$mk/with space.map"
		s1=$(sopen "$mk/with space.map")
		s2=$(sopen "$mk/with space.map")
		expect_eq "a name with a space mounts" "$TMP/run/savefs/with space.map" "$s1"
		expect_eq "a name with a space is found again" "$s1" "$s2"
		# A failed open leaves no directory; an unmounted one is cleaned
		# up at the next open.
		printf 'not a save\n' > "$mk/plain.map"
		sopen "$mk/plain.map" > /dev/null 2> "$TMP/open.err"
		expect_eq "a failed open exits as savefs does (unknown format)" 4 "$?"
		check "a failed open leaves no directory" test ! -e "$TMP/run/savefs/plain.map"
		for d in "$d1" "$a1" "$b1" "$s1"; do fusermount3 -u "$d"; done
		sopen "$mk/a.map" > /dev/null
		expect_eq "directories of unmounted containers are removed at the next open" \
			"a.map" "$(ls "$TMP/run/savefs" | tr '\n' ' ' | sed 's/ $//')"
		fusermount3 -u "$TMP/run/savefs/a.map"
		# Without XDG_RUNTIME_DIR: a directory of the user's own in TMPDIR,
		# mode 0700, and refused if someone else's or open to others.
		unset XDG_RUNTIME_DIR
		mkdir -p "$TMP/shared"
		t1=$(TMPDIR=$TMP/shared sopen "$mk/a.map")
		expect_eq "without XDG_RUNTIME_DIR: under TMPDIR/savefs-UID" \
			"$TMP/shared/savefs-$(id -u)/savefs/a.map" "$t1"
		expect_eq "that directory is private" 700 "$(stat -c %a "$TMP/shared/savefs-$(id -u)")"
		fusermount3 -u "$t1"
		mkdir -p "$TMP/open/savefs-$(id -u)"
		chmod 777 "$TMP/open/savefs-$(id -u)"
		TMPDIR=$TMP/open sopen "$mk/a.map" > /dev/null 2> "$TMP/open.err"
		expect_eq "a directory open to others is refused (exit 3)" 3 "$?"
		expect_eq "and said so" "savefs-open: $TMP/open/savefs-$(id -u) is not a directory of your own with mode 0700: refusing to mount there (set XDG_RUNTIME_DIR)" \
			"$(cat "$TMP/open.err")"
		check "nothing was mounted there" test ! -e "$TMP/open/savefs-$(id -u)/savefs"
		mkdir -p "$TMP/other"
		ln -s "$TMP/shared/savefs-$(id -u)" "$TMP/other/savefs-$(id -u)"
		TMPDIR=$TMP/other sopen "$mk/a.map" > /dev/null 2>&1
		expect_eq "a symbolic link in its place is refused" 3 "$?"
		if id nobody > /dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
			mkdir -p "$TMP/theirs/savefs-0"
			chmod 700 "$TMP/theirs/savefs-0"
			chown nobody "$TMP/theirs/savefs-0"
			TMPDIR=$TMP/theirs sopen "$mk/a.map" > /dev/null 2>&1
			expect_eq "another user's directory is refused" 3 "$?"
		fi
	fi
else
	printf 'SKIP (part): update-mime-database, xdg-mime or mimetype missing: MIME checks left out\n'
fi
finish
