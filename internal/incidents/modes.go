package incidents

// The connection modes incident: a reply path shared by both protocols,
// mended for one of them only.
var (
	// ModesOld refuses to reply a negative double ("ERR planted:
	// negative double reply"), in RESP2 and RESP3 alike: ZINCRBY that
	// takes a score below zero, ZSCORE of a member with one.
	ModesOld = []string{"modes-negative-double.patch"}
	// ModesResp2Only mends the RESP2 reply only: a connection that speaks
	// RESP3 (HELLO 3) is still refused. The incident's client spoke
	// RESP2, so every variant of it in RESP2 passes; only a variant on a
	// connection turned to RESP3 (kind mode) sees it.
	ModesResp2Only = []string{"modes-negative-double.patch", "modes-fix-resp2-only.patch"}
)

// NegativeScore is the incident's session under redis-cli (whose first
// request, COMMAND DOCS, is step 1): a leaderboard whose scores go up,
// then one below zero (step 5) is refused.
var NegativeScore = [][]string{
	{"ZADD", "board", "10", "alice", "20", "bob"},
	{"ZINCRBY", "board", "5", "alice"},
	{"ZSCORE", "board", "bob"},
	{"ZINCRBY", "board", "-30", "alice"},
}

// RecordNegativeScore records NegativeScore into out on the old build
// with the stock redis-cli at redisCli, the failing step marked with the
// oracle error.
func RecordNegativeScore(out, old, redisCli string) error {
	if err := RecordWithRedisCli(out, old, redisCli, NegativeScore); err != nil {
		return err
	}
	return MarkFailure(out, 5, "error")
}
