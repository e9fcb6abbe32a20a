#!/bin/bash
# rgw.sh - an S3 store for the tests and the bench, sourced after lib.sh
# (or with PYTHON, SV_WAIT, die and skip defined): Ceph's RADOS Gateway
# on a one-node cluster, started on loopback ports in a directory of its
# own: one monitor, one OSD keeping its objects in memory (memstore), and
# radosgw with its beast frontend.  Internal authentication is off (the
# cluster is reachable on 127.0.0.1 only); S3 requests are signed and
# checked as on any store, by a user made with radosgw-admin.
#
#   rgw_start DIR   starts it; sets RGW_ENDPOINT (http://127.0.0.1:PORT),
#                   RGW_KEY and RGW_SECRET (the S3 user's).  With
#                   SAVEFS_TEST_RGW set (a directory scripts/rgw-run
#                   serves for a whole test run), that store is used
#                   instead, emptied first: every bucket in it is the
#                   script's own
#   rgw_stop        stops the gateway, then the OSD, then the monitor, each
#                   awaited (stopped together, the OSD waits on the dead
#                   monitor)
#   rgw_gateway_stop / rgw_gateway_start   the gateway alone (a store gone
#                   mid-use, and back)
#   s3curl ARGS...  curl with the user's signature (SigV4)

rgw_need()
{
	local t
	for t in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool ceph-authtool curl; do
		command -v "$t" > /dev/null ||
			skip "$t is not installed (Debian: radosgw ceph-mon ceph-osd ceph-common curl)"
	done
}

_rgw_port()
{
	"$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

RGW_DIR=
RGW_PIDS=()
RGW_GW_PID=

# _rgw_wait WHAT SECONDS COMMAND...: until COMMAND succeeds.
_rgw_wait()
{
	local what=$1 tries=$(($2 * 10))
	shift 2
	until "$@" > /dev/null 2>&1; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || die "the S3 store: $what did not happen (logs in $RGW_DIR/log)"
		sleep 0.1
	done
}

rgw_ceph()
{
	timeout 60 ceph -c "$RGW_DIR/ceph.conf" "$@"
}

rgw_gateway_start()
{
	radosgw -f -c "$RGW_DIR/ceph.conf" -n client.rgw < /dev/null > "$RGW_DIR/log/radosgw.out" 2>&1 &
	RGW_GW_PID=$!
	echo "$RGW_GW_PID" > "$RGW_DIR/gw.pid"
	_rgw_wait "the gateway answering on $RGW_ENDPOINT" "$((SV_WAIT * 6))" \
		curl -sf -o /dev/null "$RGW_ENDPOINT/"
}

rgw_gateway_stop()
{
	[ -n "$RGW_GW_PID" ] || return 0
	kill "$RGW_GW_PID" 2> /dev/null
	wait "$RGW_GW_PID" 2> /dev/null || true
	# (the run's gateway is no child of this shell: its end is polled)
	local tries=$((SV_WAIT * 60))
	while kill -0 "$RGW_GW_PID" 2> /dev/null && [ "$tries" -gt 0 ]; do
		tries=$((tries - 1))
		sleep 0.1
	done
	RGW_GW_PID=
}

# The run's store (SAVEFS_TEST_RGW): its settings read, its gateway's pid
# taken, every bucket removed with its objects.
_rgw_shared()
{
	# shellcheck source=/dev/null
	. "$SAVEFS_TEST_RGW/env" || die "cannot read $SAVEFS_TEST_RGW/env"
	RGW_SHARED=1
	RGW_GW_PID=$(cat "$RGW_DIR/gw.pid" 2> /dev/null)
	curl -sf -o /dev/null "$RGW_ENDPOINT/" || rgw_gateway_start
	local b
	for b in $(timeout 60 radosgw-admin -c "$RGW_DIR/ceph.conf" bucket list 2> /dev/null |
		"$PYTHON" -c 'import json, sys; print(" ".join(json.load(sys.stdin)))'); do
		timeout 60 radosgw-admin -c "$RGW_DIR/ceph.conf" bucket rm --bucket="$b" \
			--purge-objects > /dev/null 2>&1 || die "cannot empty the run's store of $b"
	done
}

rgw_start()
{
	rgw_need
	if [ -n "${SAVEFS_TEST_RGW:-}" ] && [ -f "$SAVEFS_TEST_RGW/env" ]; then
		_rgw_shared
		return
	fi
	RGW_DIR=$1
	mkdir -p "$RGW_DIR"/{mon,osd,run,log,rgw,crash} || die "cannot make $RGW_DIR"
	local mon_port rgw_port fsid
	mon_port=$(_rgw_port)
	rgw_port=$(_rgw_port)
	fsid=$("$PYTHON" -c 'import uuid; print(uuid.uuid4())')
	RGW_ENDPOINT="http://127.0.0.1:$rgw_port"
	cat > "$RGW_DIR/ceph.conf" <<-EOF
	[global]
	fsid = $fsid
	mon host = 127.0.0.1:$mon_port
	public addr = 127.0.0.1
	cluster addr = 127.0.0.1
	auth cluster required = none
	auth service required = none
	auth client required = none
	ms mon client mode = crc secure
	osd objectstore = memstore
	memstore device bytes = 2147483648
	osd pool default size = 1
	osd pool default min size = 1
	mon allow pool size one = true
	osd pool default pg autoscale mode = off
	osd pool default pg num = 8
	osd pool default pgp num = 8
	paxos propose interval = 0.01
	run dir = $RGW_DIR/run
	log file = $RGW_DIR/log/\$name.log
	admin socket = $RGW_DIR/run/\$name.asok
	mon data = $RGW_DIR/mon
	osd data = $RGW_DIR/osd
	keyring = $RGW_DIR/keyring
	crash dir = $RGW_DIR/crash
	[client.rgw]
	rgw frontends = beast endpoint=127.0.0.1:$rgw_port
	rgw data = $RGW_DIR/rgw
	EOF
	monmaptool --create --add a "127.0.0.1:$mon_port" --fsid "$fsid" "$RGW_DIR/monmap" \
		> /dev/null 2>&1 || die "monmaptool failed"
	ceph-authtool --create-keyring "$RGW_DIR/keyring" --gen-key -n mon. --cap mon 'allow *' \
		> /dev/null 2>&1 || die "ceph-authtool failed"
	ceph-mon -c "$RGW_DIR/ceph.conf" --mkfs -i a --monmap "$RGW_DIR/monmap" \
		--keyring "$RGW_DIR/keyring" > "$RGW_DIR/log/mkfs.out" 2>&1 ||
		die "ceph-mon --mkfs failed: $(tail -n 3 "$RGW_DIR/log/mkfs.out")"
	ceph-mon -f -c "$RGW_DIR/ceph.conf" -i a < /dev/null > "$RGW_DIR/log/mon.out" 2>&1 &
	RGW_PIDS=($!)
	local id
	id=$(rgw_ceph osd create) || die "ceph osd create failed (the monitor: $RGW_DIR/log)"
	ceph-osd -c "$RGW_DIR/ceph.conf" -i "$id" --mkfs > "$RGW_DIR/log/osd-mkfs.out" 2>&1 ||
		die "ceph-osd --mkfs failed: $(tail -n 3 "$RGW_DIR/log/osd-mkfs.out")"
	ceph-osd -f -c "$RGW_DIR/ceph.conf" -i "$id" < /dev/null > "$RGW_DIR/log/osd.out" 2>&1 &
	RGW_PIDS=($! "${RGW_PIDS[@]}")
	_rgw_wait "the OSD up" "$((SV_WAIT * 6))" sh -c \
		"timeout 20 ceph -c '$RGW_DIR/ceph.conf' osd stat | grep -q ' 1 up'"
	# The gateway's pools in one session (each its own would cost a
	# second or more).
	local p
	for p in .rgw.root default.rgw.control default.rgw.meta default.rgw.log \
		default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec; do
		echo "osd pool create $p 8"
	done | rgw_ceph > "$RGW_DIR/log/pools.out" 2>&1 ||
		die "creating the gateway's pools failed: $(tail -n 3 "$RGW_DIR/log/pools.out")"
	rgw_gateway_start
	RGW_KEY=SAVEFSTESTKEY
	RGW_SECRET=savefs-test-secret-$$
	timeout 60 radosgw-admin -c "$RGW_DIR/ceph.conf" user create --uid savefs \
		--display-name savefs --access-key "$RGW_KEY" --secret "$RGW_SECRET" \
		> "$RGW_DIR/log/user.out" 2>&1 ||
		die "radosgw-admin user create failed: $(tail -n 3 "$RGW_DIR/log/user.out")"
}

rgw_stop()
{
	if [ -n "${RGW_SHARED:-}" ]; then
		# The run's: left running for the next script (its gateway
		# back, if the script stopped it).
		curl -sf -o /dev/null "$RGW_ENDPOINT/" || rgw_gateway_start
		return 0
	fi
	rgw_gateway_stop
	local pid
	for pid in "${RGW_PIDS[@]}"; do
		kill "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null || true
	done
	RGW_PIDS=()
}

s3curl()
{
	curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user "$RGW_KEY:$RGW_SECRET" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}
