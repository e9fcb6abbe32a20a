# fixtures.sh - the replay recordings whose trees have golden listings here
# (sourced by tests/golden/update.sh and tests/e2e/recording.sh).
RC_FIXTURES="run.hcrp run-seg"

# make_rc_golden DIR: writes DIR/run.hcrp (compacted, 450 ticks, every
# event id) and DIR/run-seg (the same run as a recorder leaves it: two
# chunks a segment, a stale .preamble-*.tmp, a segment no preamble names).
make_rc_golden()
{
	mkdir -p -- "$1" &&
		"$MKRECORDING" compacted "$1/run.hcrp" -n 450 -e 2 -s 21 &&
		"$MKRECORDING" segmented "$1/run-seg" -n 450 -e 2 -s 21 -S 2 --leftovers
}
