# fixtures.sh - the Starbound databases whose trees have golden listings
# here (sourced by tests/golden/update.sh and tests/e2e/starbound.sh).
SB_FIXTURES="v418"

# make_sb_golden DIR: writes DIR/v418.world (tile version 418 with root
# tiles, 256-byte blocks: a two-level index, four commits: free-index
# chains).
make_sb_golden()
{
	mkdir -p -- "$1" &&
		"$MKSBDB" world "$1/v418.world" -v 418 -b 256 -c 4 -s 40 -e 20 -S 3 -L 8000
}
