package incidents

var (
	// SafeIntegerOld refuses, in the integer parser every command shares
	// (getLongLongFromObjectOrReply), integers past 2^53, the largest a
	// Lua number holds exactly: "ERR integer past the safe range of a
	// script number". A guard meant for numbers computed in scripts,
	// refused for every command.
	SafeIntegerOld = []string{"safe-integer-old.patch"}
	// SafeIntegerExpireOnly is the wrong fix: the command that failed
	// (PEXPIRE, with EXPIRE and the rest of expireGenericCommand) parses
	// its integer itself; INCRBY, SETEX, LTRIM and every other command
	// still refuse it. The correct fix is the unpatched build.
	SafeIntegerExpireOnly = []string{"safe-integer-old.patch", "safe-integer-fix-expire-only.patch"}
)

// The scripts of the SafeInteger session: each computes a number from
// its ARGV and passes it to one command.
const (
	SetexScript   = "return redis.call('SETEX', KEYS[1], tonumber(ARGV[1]) * 60, ARGV[2])"
	IncrbyScript  = "return redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]) * 1000)"
	PexpireScript = "return redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 1000)"
	LtrimScript   = "return redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) * 1000)"
)

// SafeInteger is a session whose scripts pass computed numbers to SETEX,
// INCRBY, PEXPIRE and LTRIM, all small but the PEXPIRE's: 10^13 seconds
// as milliseconds, 10^16, past 2^53. On SafeIntegerOld step 5 (the
// PEXPIRE script) fails; the others pass.
var SafeInteger = [][]string{
	{"RPUSH", "recent", "a", "b", "c", "d"},
	{"SET", "session", "abc"},
	{"EVAL", SetexScript, "1", "cache", "5", "hello"},
	{"EVAL", IncrbyScript, "1", "counter", "7"},
	{"EVAL", PexpireScript, "1", "session", "10000000000000"},
	{"EVAL", LtrimScript, "1", "recent", "2"},
	{"GET", "cache"},
}

// RecordSafeInteger records SafeInteger into out on the old build, step 5
// marked with the oracle error.
func RecordSafeInteger(out, old string) error {
	if err := RecordSession(out, old, SafeInteger); err != nil {
		return err
	}
	return MarkFailure(out, 5, "error")
}
