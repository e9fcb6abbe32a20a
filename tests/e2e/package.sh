#!/bin/bash
# package.sh - the Debian package: built from a copy of the source tree by
# dpkg-buildpackage -us -uc -b (debhelper and meson), lintian finds no
# error in it, it holds every file a user needs, and apt-get installs it on
# this machine, whose installed savefs then mounts a generated level, reads
# it and unmounts it; the package is purged at the end.  Needs root (the
# install).

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
[ "$(id -u)" -eq 0 ] || skip "installing a package needs root"
for tool in dpkg-buildpackage lintian dh apt-get; do
	command -v "$tool" > /dev/null || die "$tool is missing (scripts/deps installs it)"
done
if dpkg-query -W -f='${Status}' savefs 2> /dev/null | grep -q 'install ok installed'; then
	skip "a savefs package is installed on this machine already: not replaced by a test"
fi
purge() { apt-get purge -y -qq savefs > /dev/null 2>&1; }
# (The package goes whatever happens; a mount left by a failure first.)
trap 'rc=$?; [ -n "${m:-}" ] && fusermount3 -u -z "$m" 2> /dev/null; purge; (exit $rc); _sv_cleanup' EXIT

version=$("$SAVEFS" --version | cut -d' ' -f2)
src=$TMP/pkg/savefs-$version
mkdir -p "$src"
# The source as it stands (tracked files and new ones, not the builds).
if git -C "$SRC_ROOT" rev-parse --git-dir > /dev/null 2>&1; then
	(cd "$SRC_ROOT" && git ls-files -co --exclude-standard | grep -v '^build' |
		tar -cf - -T -) | tar -xf - -C "$src" || die "cannot copy the source"
else
	(cd "$SRC_ROOT" && tar -cf - --exclude='./build*' .) | tar -xf - -C "$src" ||
		die "cannot copy the source"
fi
expect_eq "debian/changelog's version is the program's" "$version" \
	"$(cd "$src" && dpkg-parsechangelog -S Version)"
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
	> "$TMP/build.log" 2>&1
rc=$?
expect_eq "dpkg-buildpackage -us -uc -b: exit 0" 0 "$rc"
[ "$rc" -eq 0 ] || { tail -30 "$TMP/build.log"; die "the package was not built"; }
deb=$TMP/pkg/savefs_${version}_$(dpkg --print-architecture).deb
check "the package is $deb" test -f "$deb"

lintian --fail-on error "$TMP/pkg"/savefs_*.changes > "$TMP/lintian.log" 2>&1
expect_eq "lintian: exit 0 (no error)" 0 $?
expect_eq "lintian: no error, no warning" "" "$(grep -E '^[EW]: ' "$TMP/lintian.log")"

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$TMP/contents"
for f in /usr/bin/savefs /usr/bin/savefs-open /usr/bin/savefs-thumbnailer \
	/usr/share/man/man1/savefs.1.gz /usr/share/man/man1/savefs-open.1.gz \
	/usr/share/man/man1/savefs-thumbnailer.1.gz /usr/share/bash-completion/completions/savefs \
	/usr/share/mime/packages/savefs.xml /usr/share/applications/savefs-open.desktop \
	/usr/share/thumbnailers/savefs.thumbnailer /usr/share/doc/savefs/copyright; do
	check "the package holds $f" grep -qxF "$f" "$TMP/contents"
done
check "it depends on fuse3 and libcurl4 (loaded at the first URL)" sh -c \
	"dpkg-deb -f '$deb' Depends | grep -q 'fuse3' && dpkg-deb -f '$deb' Depends | grep -q 'libcurl4'"

apt-get install -y -qq "$deb" > "$TMP/install.log" 2>&1
expect_eq "apt-get install ./savefs_*.deb: exit 0" 0 $?
expect_eq "the installed savefs runs" "savefs $version" "$(/usr/bin/savefs --version)"
check "man finds its page" sh -c 'man -w savefs | grep -q /usr/share/man/man1/savefs.1.gz'

"$MKDOODLE" level "$TMP/castle.level" --container zip > /dev/null || die "mkdoodle failed"
mkdir -p "$TMP/m"
m=$(realpath -- "$TMP/m")
/usr/bin/savefs "$TMP/castle.level" "$m"
expect_eq "the installed savefs mounts a level" 0 $?
"$SAVEFS" cat "$TMP/castle.level" level.json > "$TMP/want.json"
expect_same_file "its level.json, as the built savefs shows it" "$TMP/want.json" "$m/level.json"
expect_eq "savefs mounts shows it" "$m"$'\t'"$TMP/castle.level"$'\t'doodle \
	"$(/usr/bin/savefs mounts | grep -F "$m" | cut -f1-3)"
expect_eq "the installed savefs unmounts it" "$m: unmounted, every edit written" \
	"$(/usr/bin/savefs umount "$m")"
/usr/bin/savefs-thumbnailer -s 64 "$TMP/castle.level" "$TMP/castle.png"
expect_eq "the installed thumbnailer makes the level's" 0 $?

purge
expect_eq "apt-get purge savefs: the binary goes" "" "$(ls /usr/bin/savefs 2> /dev/null)"

finish
