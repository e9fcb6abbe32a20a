#!/bin/bash
# http.sh - containers on an HTTP server, read by range: nginx, started
# here on a loopback port with its own configuration, serves containers
# made by the project's writers (a map, a level, a world, a universe, a
# NetHack log, a compacted recording); each, mounted from its URL, shows
# the tree its local file shows, byte for byte.  A container within the
# first read costs one request; the server stopped mid-use fails a read
# with EIO and a reason, no hang, and reads work again when it is back;
# an object replaced on the server is never mixed with the old one (412
# to If-Match: EIO, the reason in the log); a missing object, an
# unreachable server and a server that does not answer ranges fail the
# mount with a message and exit code 3 or 5; a slow server (half a second
# of round trip) is slow, never failed.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_python
command -v nginx > /dev/null || skip "nginx is not installed (Debian: nginx-light)"
for t in "$MKDATAFILE" "$MKSBDB" "$MKRECORDING" "$MKDOODLE" "$MKNHGAME"; do
	[ -x "$t" ] || die "$t is not an executable (build first)"
done

www="$TMP/www"
mkdir -p "$www" "$TMP/nginx"
# nginx's workers run as another user (www-data): the scratch directory
# is let through, the served one readable.
chmod o+x "$TMP" && chmod o+rx "$www" || die "cannot open $www to nginx's workers"
port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# nginx_conf RANGES: a configuration serving $www on $port, with byte
# ranges on or off (max_ranges 0: every Range ignored, 200 whole).
nginx_conf()
{
	cat > "$TMP/nginx/nginx.conf" <<-EOF
	daemon off;
	worker_processes 1;
	pid $TMP/nginx/nginx.pid;
	error_log $TMP/nginx/error.log;
	events { worker_connections 64; }
	http {
	  log_format sv '\$request_method \$status "\$http_range" "\$http_if_match" "\$sent_http_etag"';
	  access_log $TMP/nginx/access.log sv;
	  client_body_temp_path $TMP/nginx/body;
	  proxy_temp_path $TMP/nginx/proxy;
	  fastcgi_temp_path $TMP/nginx/fastcgi;
	  uwsgi_temp_path $TMP/nginx/uwsgi;
	  scgi_temp_path $TMP/nginx/scgi;
	  server {
	    listen 127.0.0.1:$port;
	    root $www;
	    $([ "$1" = on ] || echo "max_ranges 0;")
	  }
	}
	EOF
}

NGINX_PID=
nginx_start()
{
	nginx -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" &
	NGINX_PID=$!
	local tries=$((SV_WAIT * 20))
	until "$PYTHON" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
		"$port" 2> /dev/null; do
		kill -0 "$NGINX_PID" 2> /dev/null || die "nginx exited: $(cat "$TMP/nginx/error.log")"
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || die "nginx did not listen on 127.0.0.1:$port within ${SV_WAIT}s"
		sleep 0.05
	done
}

nginx_stop()
{
	[ -n "$NGINX_PID" ] || return 0
	kill "$NGINX_PID" 2> /dev/null
	wait "$NGINX_PID" 2> /dev/null
	NGINX_PID=
}
trap 'nginx_stop' EXIT
# lib.sh's own trap runs as well: chained.
trap 'nginx_stop; _sv_cleanup' EXIT

# source_field MNT KEY: /.savefs/info's source.KEY.
source_field()
{
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["source"][sys.argv[2]])' \
		"$1/.savefs/info" "$2"
}

"$MKDATAFILE" gen "$www/arena.map" --data 6 --payload 30K --items 4 --seed 5 > /dev/null ||
	die "mkdatafile failed"
"$MKDOODLE" level "$www/castle.level" --container zip --chunks rle --count 3000 --seed 1 \
	> /dev/null || die "mkdoodle failed"
"$MKSBDB" world "$www/world.world" > /dev/null || die "mksbdb world failed"
"$MKSBDB" celestial "$www/universe.chunks" -n 3000 > /dev/null || die "mksbdb celestial failed"
"$MKNHGAME" "$www/game.nhgame" --turns 2000 --seed 1 > /dev/null || die "mknhgame failed"
"$MKRECORDING" compacted "$www/run.hcrp" -n 40000 -k 20 -e 1 -z 3 --quiet ||
	die "mkrecording failed"
nginx_conf on
nginx_start
base="http://127.0.0.1:$port"

# ---- savefs diff across a server and a local copy ----
"$SAVEFS" diff -o noindex "$base/arena.map" "$www/arena.map" > "$TMP/diff.out"
expect_eq "savefs diff: an object and its local copy are the same (exit 0)" 0 $?
expect_eq "and it says nothing" "" "$(cat "$TMP/diff.out")"
cp -- "$www/arena.map" "$TMP/arena-edited.map"
mount_sv "$TMP/arena-edited.map" "$TMP/m-edit" || die "cannot mount the copy"
printf 'changed\n' > "$TMP/m-edit/data/00001.bin" || fail "writing data/00001.bin"
umount_sv "$TMP/m-edit"
expect_eq "savefs diff --name-only: an object against an edited copy" "data/00001.bin header.json" \
	"$("$SAVEFS" diff -o noindex --name-only "$base/arena.map" "$TMP/arena-edited.map" | tr '\n' ' ' | sed 's/ $//')"

# ---- each format: the same tree as its local file ----
for f in arena.map castle.level world.world universe.chunks game.nhgame run.hcrp; do
	size=$(stat -c %s "$www/$f")
	before=$(wc -l < "$TMP/nginx/access.log")
	mount_sv "$base/$f" "$TMP/remote-$f" -o noindex || continue
	mount_sv "$www/$f" "$TMP/local-$f" -o ro,noindex || { umount_sv "$TMP/remote-$f"; continue; }
	M="$TMP/remote-$f"
	expect_eq "$f: the source" "HTTP object" "$(source_field "$M" kind)"
	expect_eq "$f: mounted read-only" True "$(json_field "$M/.savefs/info" read_only)"
	log_has "$f: why read-only" "$base/$f: an object on an HTTP server is read by range, never written: mounted read-only"
	if [ "$size" -le 262144 ]; then
		# The first read takes the first 256 KB: the whole object.
		expect_eq "$f ($size bytes): requests at the mount" 1 \
			"$(( $(wc -l < "$TMP/nginx/access.log") - before ))"
	fi
	same_trees "$f" "$TMP/local-$f" "$M" 5
	all=$(wc -l < "$TMP/nginx/access.log")
	if [ "$size" -le 262144 ]; then
		expect_eq "$f: requests after reading every file" 1 "$((all - before))"
	fi
	expect_eq "$f: the requests nginx saw, counted by savefs" "$((all - before))" \
		"$(source_field "$M" requests)"
	# The first read: the first 256 KB, no ETag known yet; every later
	# one: a range with If-Match on the ETag the first answered.
	tail -n "$((all - before))" "$TMP/nginx/access.log" > "$TMP/$f.requests"
	etag=$(head -n 1 "$TMP/$f.requests" | sed 's/.* "\(.*\)"$/\1/')
	expect_eq "$f: the first request" "GET 206 \"bytes=0-262143\" \"-\" \"$etag\"" \
		"$(head -n 1 "$TMP/$f.requests")"
	expect_eq "$f: later requests without If-Match on that ETag, or not ranged" 0 \
		"$(tail -n +2 "$TMP/$f.requests" | ETAG=$etag awk '
			$1 != "GET" || $2 != "206" || $3 !~ /^"bytes=[0-9]+-[0-9]+"$/ ||
			$4 != "\"" ENVIRON["ETAG"] "\"" || $5 != $4 { bad++ }
			END { print bad + 0 }')"
	umount_sv "$TMP/local-$f"
	umount_sv "$TMP/remote-$f"
done

# ---- the persistent index of a remote container ----
# Two names for one universe with the same time and size: nginx gives them
# the same ETag.  Each keeps its own record (the URL is in the key), and a
# second mount of each lists what the first did.
cp -p -- "$www/universe.chunks" "$www/twin.chunks"
rm -rf -- "$XDG_CACHE_HOME/savefs"
for f in universe.chunks twin.chunks universe.chunks twin.chunks; do
	M="$TMP/indexed"
	mount_sv "$base/$f" "$M" || continue
	ls "$M/celestial" > "$TMP/$f.celestial.now" || fail "$f: cannot list celestial/"
	if [ -e "$TMP/$f.celestial" ]; then
		expect_same_text "$f: celestial/ from the kept index" "$TMP/$f.celestial" \
			"$TMP/$f.celestial.now"
	else
		mv -- "$TMP/$f.celestial.now" "$TMP/$f.celestial"
	fi
	umount_sv "$M"
done
expect_eq "celestial/ names" 3000 "$(wc -l < "$TMP/universe.chunks.celestial")"
expect_eq "records kept for two URLs of one ETag" 2 \
	"$(find "$XDG_CACHE_HOME/savefs" -maxdepth 1 -type f -name '????????????????????????????????' | wc -l)"

# ---- the disk cache: a second mount fetches only the first block ----
# run.hcrp (1.4 MB) through a 1 MiB cache: every chunk's text read by one
# mount, then by a second one, which finds the blocks on disk; then a
# damaged block on disk is fetched again, and only it.
rm -rf -- "$XDG_CACHE_HOME/savefs"
M="$TMP/disk"
for round in first second damaged; do
	# (The views the last round kept go: the blocks are what is tried.)
	rm -rf -- "$XDG_CACHE_HOME/savefs/views"
	before=$(wc -l < "$TMP/nginx/access.log")
	mount_sv "$base/run.hcrp" "$M" -o cache=1M || continue
	cat "$M"/chunks/*.txt > "$TMP/texts.$round" || fail "$round: cannot read the chunks"
	n=$(source_field "$M" requests)
	umount_sv "$M"
	expect_eq "$round mount: requests nginx saw, counted by savefs" \
		"$(( $(wc -l < "$TMP/nginx/access.log") - before ))" "$n"
	case $round in
	first)
		[ "$n" -gt 1 ] || fail "first mount: $n requests (the fixture is within 256 KB?)"
		blocks=$(find "$XDG_CACHE_HOME/savefs/blocks" -type f | wc -l)
		expect_eq "blocks on disk" 5 "$blocks" ;;
	second)
		expect_eq "second mount: requests (the first block only)" 1 "$n"
		# A byte of one block's record flipped, at its end (its bytes).
		rec=$(find "$XDG_CACHE_HOME/savefs/blocks" -type f | head -n 1)
		"$PYTHON" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(-1, 2); b = f.read(1); f.seek(-1, 2); f.write(bytes([b[0] ^ 1]))' "$rec" ;;
	damaged)
		expect_eq "a damaged block on disk: requests (the first, and it again)" 2 "$n" ;;
	esac
	cmp -s "$TMP/texts.first" "$TMP/texts.$round" || fail "$round mount: other bytes than the first"
done
# The views themselves kept: a fourth mount reads no block past the first.
mount_sv "$base/run.hcrp" "$M" -o cache=1M || die "cannot mount run.hcrp a fourth time"
cat "$M"/chunks/*.txt > "$TMP/texts.kept" || fail "kept views: cannot read the chunks"
expect_eq "kept views: requests (the first block only)" 1 "$(source_field "$M" requests)"
kept_read=$(kept_count "$M" views_read)
[ "$kept_read" -gt 0 ] || fail "kept views: none read from the disk"
umount_sv "$M"
cmp -s "$TMP/texts.first" "$TMP/texts.kept" || fail "kept views: other bytes than the first"

# An object with a new ETag (the same size): nothing kept for the old one
# is served.
"$MKDOODLE" level "$www/t.level" --container json --chunks map --count 6 --seed 3 \
	--title Alpha1 > /dev/null || die "mkdoodle failed"
"$MKDOODLE" level "$TMP/t2.level" --container json --chunks map --count 6 --seed 3 \
	--title Alpha2 > /dev/null || die "mkdoodle failed"
mount_sv "$base/t.level" "$M" || die "cannot mount t.level"
grep -q '"Alpha1"' "$M/level.json" || fail "t.level: level.json lacks its title"
cat "$M"/chunks/*/*.txt > /dev/null
umount_sv "$M"
cat -- "$TMP/t2.level" > "$www/t.level"
touch -d '2001-01-01 00:00:00' -- "$www/t.level"
mount_sv "$base/t.level" "$M" || die "cannot mount the changed t.level"
grep -q '"Alpha2"' "$M/level.json" || fail "a new ETag: level.json does not show the new title"
expect_eq "a new ETag: no view from the disk" 0 \
	"$(kept_count "$M" views_read)"
umount_sv "$M"

cmp -s "$TMP/texts.first" <(cat "$TMP/local-run.hcrp/chunks/"*.txt 2> /dev/null ||
	"$SAVEFS" extract "$www/run.hcrp" "$TMP/run.extracted" > /dev/null &&
	cat "$TMP/run.extracted/chunks/"*.txt) || fail "the chunks' texts are not the local file's"

# ---- a small object is fetched whole at its first miss ----
# run.hcrp (1.4 MB, within half the default 64 MiB cache): the first read
# past the first block fetches the rest in one request (runs of 8 MiB, a
# few at once), so every chunk's text costs two requests in all.
M="$TMP/whole"
before=$(wc -l < "$TMP/nginx/access.log")
mount_sv "$base/run.hcrp" "$M" -o noindex || die "cannot mount run.hcrp"
cat "$M"/chunks/*.txt > "$TMP/texts.whole" || fail "whole: cannot read the chunks"
expect_eq "a small object read through: requests" 2 "$(source_field "$M" requests)"
umount_sv "$M"
expect_eq "a small object read through: requests nginx saw" 2 \
	"$(( $(wc -l < "$TMP/nginx/access.log") - before ))"
size=$(stat -c %s "$www/run.hcrp")
expect_eq "the second request: the rest of the object" \
	"GET 206 \"bytes=262144-$((size - 1))\"" \
	"$(tail -n 1 "$TMP/nginx/access.log" | cut -d' ' -f1-3)"
cmp -s "$TMP/texts.first" "$TMP/texts.whole" || fail "whole: other bytes than block by block"

# ---- a large object: reads across blocks, and the index's hints ----
# A 6 MB recording through a 4 MiB cache (not fetched whole): a tick whose
# chunk's stored bytes cross a block's end costs one request for both
# blocks; sixteen chunks' texts read in order cost one request (the first
# read hints the chunks after it, as the index names them).
"$MKRECORDING" compacted "$www/big.hcrp" -n 300000 -e 2 -z 3 --quiet || die "mkrecording failed"
M="$TMP/big"
mount_sv "$base/big.hcrp" "$M" -o noindex,cache=4M || die "cannot mount big.hcrp"
read -r chunk tick off len <<< "$(awk -F'\t' 'NR > 1 && $6 >= 524288 &&
	int($6 / 262144) != int(($6 + $7 - 1) / 262144) { print $1, $2, $6, $7; exit }' "$M/index.tsv")"
[ -n "$len" ] || die "big.hcrp: no chunk across a block's end (the fixture changed?)"
before=$(wc -l < "$TMP/nginx/access.log")
t=$(printf '%08d' "$tick")
cmp -s "$M/at/$t.json" <("$SAVEFS" cat "$www/big.hcrp" "at/$t.json") ||
	fail "big: at/$t.json read wrong"
b0=$((off / 262144 * 262144))
expect_eq "big: at/$t.json (chunk $chunk, across a block's end): one request for both blocks" \
	"GET 206 \"bytes=$b0-$((b0 + 2 * 262144 - 1))\"" \
	"$(tail -n +"$((before + 1))" "$TMP/nginx/access.log" | cut -d' ' -f1-3 | tr '\n' ' ' | sed 's/ $//')"
# Sixteen chunks whose stored bytes begin in one block and end in the
# next (neither held yet): the first read hints them all.
read -r first b0 <<< "$(awk -F'\t' 'NR > 1 { o[NR] = $6; l[NR] = $7; c[NR] = $1 }
	END { for (i = 2; i < NR - 16; i++)
		if (o[i] >= 1048576 && int(o[i] / 262144) + 1 == int((o[i + 15] + l[i + 15] - 1) / 262144)) {
			print c[i] + 0, int(o[i] / 262144) * 262144; exit } }' "$M/index.tsv")"
[ -n "$b0" ] || die "big.hcrp: no sixteen chunks across a block's end (the fixture changed?)"
before=$(wc -l < "$TMP/nginx/access.log")
for i in $(seq "$first" "$((first + 15))"); do
	n=$(printf '%06d' "$i")
	cmp -s "$M/chunks/$n.txt" <("$SAVEFS" cat "$www/big.hcrp" "chunks/$n.txt") ||
		fail "big: chunks/$n.txt read wrong"
done
# (The mount's prefetcher may read on past them: only their blocks count.)
expect_eq "big: sixteen chunks' texts in order: the requests for their two blocks" \
	"GET 206 \"bytes=$b0-$((b0 + 2 * 262144 - 1))\"" \
	"$(tail -n +"$((before + 1))" "$TMP/nginx/access.log" | cut -d' ' -f1-3 |
		awk -v b="$b0" '{ split($3, r, /[=-]/); s = r[2] + 0 }
			s >= b && s < b + 2 * 262144' | tr '\n' ' ' | sed 's/ $//')"
umount_sv "$M"

# ---- the server stopped mid-use, then back ----
# A 2 MB object read through a 1 MiB cache: the blocks are fetched as read.
M="$TMP/stop"
mount_sv "$base/run.hcrp" "$M" -o noindex,cache=1M || die "cannot mount run.hcrp"
ls "$M/chunks" > "$TMP/chunks" || fail "cannot list chunks/"
first=$(head -n 1 "$TMP/chunks")
last=$(tail -n 1 "$TMP/chunks")
cat "$M/chunks/$first" > /dev/null || fail "cannot read chunks/$first"
nginx_stop
read_fails_eio "the server stopped" "$M/chunks/$last"
log_has "server stopped: the reason" "$base/run.hcrp: Failed to connect to 127.0.0.1 port $port"
nginx_start
cmp <(cat "$M/chunks/$last") <(cat "$TMP/local-run.hcrp/chunks/$last" 2> /dev/null ||
	"$SAVEFS" cat "$www/run.hcrp" "chunks/$last") ||
	fail "chunks/$last: the server back, a wrong read"
umount_sv "$M"

# ---- a slow server ----
# Half a second of round trip added to every connection (the bench's delay
# proxy): the mount and its reads are slow, never failed.
pport=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PYTHON" "$SRC_ROOT/bench/delayproxy.py" "$pport" "$port" 500 "$TMP/proxy.count" &
proxy_pid=$!
wait_for "the delay proxy listening" "$PYTHON" -c \
	'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$pport"
M="$TMP/slow"
mount_sv "http://127.0.0.1:$pport/castle.level" "$M" -o noindex,cache=1M ||
	die "cannot mount castle.level through the delay proxy"
ls "$M/chunks/0" | grep '\.txt$' | head -n 3 > "$TMP/slow.txts"
while read -r t; do
	cmp -s "$M/chunks/0/$t" <("$SAVEFS" cat "$www/castle.level" "chunks/0/$t") ||
		fail "a slow server: chunks/0/$t read wrong"
done < "$TMP/slow.txts"
expect_eq "a slow server: failed reads" 0 "$(grep -c 'EIO\|failed' "$M/.savefs/log")"
n=$(source_field "$M" requests)
umount_sv "$M"
expect_eq "a slow server: the requests through the proxy, as savefs counted" "$n" \
	"$(cat "$TMP/proxy.count")"
kill "$proxy_pid"
wait "$proxy_pid" 2> /dev/null

# ---- an object replaced on the server between two reads ----
# Each read gives the old level's bytes (held), or fails with EIO (a read
# that met the 412), or, once the mount has read the object again, the new
# level's: never a mix.  Then every chunk is the new level's.
M="$TMP/replaced"
cp -- "$www/castle.level" "$TMP/castle.old"
mount_sv "$base/castle.level" "$M" -o noindex,cache=1M || die "cannot mount castle.level"
ls "$M/chunks/0" | grep '\.txt$' > "$TMP/txts" || fail "cannot list chunks/0"
a=$(head -n 1 "$TMP/txts")
cmp "$M/chunks/0/$a" <("$SAVEFS" cat "$TMP/castle.old" "chunks/0/$a") ||
	fail "chunks/0/$a: before the replacement, a wrong read"
# Another version of the level, renamed over the served file (a new ETag).
"$MKDOODLE" level "$TMP/castle.new" --container zip --chunks rle --count 3000 --seed 2 \
	> /dev/null || die "mkdoodle failed"
cp -- "$TMP/castle.new" "$TMP/castle.kept"
mv -- "$TMP/castle.new" "$www/castle.level"
mount_sv "$TMP/castle.old" "$TMP/old" -o ro,noindex || die "cannot mount the old level"
mount_sv "$TMP/castle.kept" "$TMP/new" -o ro,noindex || die "cannot mount the new level"
while read -r t; do
	if cat "$M/chunks/0/$t" > "$TMP/got" 2> "$TMP/err"; then
		cmp -s "$TMP/got" "$TMP/old/chunks/0/$t" || cmp -s "$TMP/got" "$TMP/new/chunks/0/$t" ||
			fail "chunks/0/$t: after the replacement, bytes of neither level"
	else
		grep -q "Input/output error" "$TMP/err" || fail "replaced: not EIO: $(cat "$TMP/err")"
	fi
done < "$TMP/txts"
# (A read ahead of the readers may meet the 412 first: then none fails.)
log_has "replaced: the reason" "$base/castle.level changed on the server since it was opened"
for _ in $(seq 600); do
	grep -q "was read again as it is on the server now" "$M/.savefs/log" && break
	sleep 0.1
done
log_has "replaced: read again" "$base/castle.level was read again as it is on the server now"
differ=0
while read -r t; do
	cmp -s "$M/chunks/0/$t" "$TMP/new/chunks/0/$t" || differ=$((differ + 1))
done < "$TMP/txts"
expect_eq "replaced: chunks not the new level's once read again" 0 "$differ"
umount_sv "$TMP/old"
umount_sv "$TMP/new"
umount_sv "$M"

# ---- the disk cache of blocks: its records are never blamed on the object --------
: "${RECORDTOOL:=$SRC_ROOT/build/tests/recordtool}"
M="$TMP/cached"
mount_sv "$base/castle.level" "$M" || die "cannot mount castle.level with the disk cache"
TREE_WARM=no tree_listing "$M" > "$TMP/castle.cold"
umount_sv "$M"
blocks=$(find "$XDG_CACHE_HOME/savefs/blocks" -type f -name '????????????????????????????????' | wc -l)
check "the cold mount kept blocks on disk" test "$blocks" -gt 1
# Every record spoiled, its hash made to match (as someone who could
# write the cache could): the warm mount drops them and reads the server.
find "$XDG_CACHE_HOME/savefs/blocks" -type f -name '????????????????????????????????' \
	-exec "$RECORDTOOL" spoil {} + || fail "recordtool spoil"
# (The views kept go too: the blocks are what is tried.)
rm -rf -- "$XDG_CACHE_HOME/savefs/views"
mount_sv "$base/castle.level" "$M" || fail "a mount over spoiled cache records"
TREE_WARM=no tree_listing "$M" > "$TMP/castle.warm"
expect_same_text "castle.level over spoiled cache records: the same tree" "$TMP/castle.cold" \
	"$TMP/castle.warm"
log_has "the spoiled records were dropped" "the disk cache's blocks of it could not be used"
umount_sv "$M"
# A cache directory open to others is not used (what it holds could be
# anyone's), and the mount says so.
chmod 777 "$XDG_CACHE_HOME/savefs"
before=$(find "$XDG_CACHE_HOME/savefs" -type f | wc -l)
mount_sv "$base/arena.map" "$M" || fail "a mount beside a cache directory open to others"
TREE_WARM=no tree_listing "$M" > /dev/null
check "the mount warns" grep -q "$XDG_CACHE_HOME/savefs is not this user's own directory (another owner, a link, or open to others): nothing is kept there between mounts" "$M/.savefs/info"
umount_sv "$M"
expect_eq "and kept nothing there" "$before" "$(find "$XDG_CACHE_HOME/savefs" -type f | wc -l)"
chmod 700 "$XDG_CACHE_HOME/savefs"

# ---- credentials in a URL are never said -------------------------------------
secret_url="http://player:s3cr3t-pw@127.0.0.1:$port"
M="$TMP/with-password"
mount_sv "$secret_url/arena.map" "$M" -o noindex || die "cannot mount with a password in the URL"
tree_listing "$M" > /dev/null
for where in "$M/.savefs/log" "$M/.savefs/info" /proc/mounts; do
	check "the password is not in $where" sh -c "! grep -q s3cr3t-pw '$where'"
done
expect_eq "the mount's source names the URL without it" "http://player:***@127.0.0.1:$port/arena.map" \
	"$(findmnt -n -o SOURCE --mountpoint "$M")"
umount_sv "$M"
expect_exit "a missing object's message does not say the password" 3 \
	"savefs: http://player:***@127.0.0.1:$port/none.map: 404 (not found)" \
	"$SAVEFS" "$secret_url/none.map" "$TMP/mnt-none"
expect_exit "nor a presigned URL's signature" 3 \
	"savefs: http://127.0.0.1:$port/none.map?X-Amz-Credential=***&X-Amz-Signature=***: 404 (not found)" \
	"$SAVEFS" "$base/none.map?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=deadbeef" "$TMP/mnt-none"

# ---- opening fails with a message and an exit code ----
expect_exit "a missing object" 3 \
	"savefs: $base/nothing.level: 404 (not found)" \
	"$SAVEFS" "$base/nothing.level" "$TMP/mnt-none"
nginx_stop
expect_exit "an unreachable server" 3 - "$SAVEFS" "$base/castle.level" "$TMP/mnt-none"
grep -q "^savefs: $base/castle.level: Failed to connect to 127.0.0.1 port $port after [0-9]* ms: Couldn't connect to server\$" "$TMP/err" ||
	fail "an unreachable server: the message: $(cat "$TMP/err")"
# ---- servers that ignore ranges: the object read whole, once ---------------------
nginx_conf off
nginx_start
mount_sv "$www/castle.level" "$TMP/local-level" -o ro,noindex || die "cannot mount castle.level"
tree_listing "$TMP/local-level" > "$TMP/castle.want"
umount_sv "$TMP/local-level"
M="$TMP/noranges-level"
before=$(wc -l < "$TMP/nginx/access.log")
mount_sv "$base/castle.level" "$M" -o noindex || die "cannot mount castle.level without ranges"
tree_listing "$M" > "$TMP/castle.noranges" || fail "cannot list castle.level"
expect_same_text "castle.level ($(stat -c %s "$www/castle.level") bytes) from a server that ignores ranges" \
	"$TMP/castle.want" "$TMP/castle.noranges"
expect_eq "two requests: the ranged read answered whole, and the whole object" 2 \
	"$(( $(wc -l < "$TMP/nginx/access.log") - before ))"
umount_sv "$M"
# Python's own server, the first one users try, knows no ranges at all.
pyport=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$www" && exec "$PYTHON" -m http.server --bind 127.0.0.1 "$pyport") > "$TMP/pyhttp.log" 2>&1 &
pyhttp=$!
wait_for "python3 -m http.server listening" "$PYTHON" -c \
	'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$pyport"
M="$TMP/pyhttp-level"
mount_sv "http://127.0.0.1:$pyport/castle.level" "$M" -o noindex ||
	fail "cannot mount castle.level from python3 -m http.server"
tree_listing "$M" > "$TMP/castle.py" || fail "cannot list castle.level"
expect_same_text "castle.level from python3 -m http.server" "$TMP/castle.want" "$TMP/castle.py"
umount_sv "$M"
kill "$pyhttp"
wait "$pyhttp" 2> /dev/null
# A small object is whole in the first read: ranges are not needed.
M="$TMP/noranges"
mount_sv "$base/arena.map" "$M" -o noindex || die "cannot mount arena.map without ranges"
tree_listing "$M" > "$TMP/arena.noranges" || fail "cannot list arena.map"
expect_same_text "arena.map from a server without ranges" "$TMP/arena.map.want" \
	"$TMP/arena.noranges"
umount_sv "$M"

finish
