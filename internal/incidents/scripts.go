package incidents

// The script incidents share one old build and one build of narrow
// fixes, as the values incidents do. The correct fix of each is the
// pristine source.
var (
	// ScriptsOld refuses negative HINCRBY and HINCRBYFLOAT increments
	// ("ERR negative hash increment not allowed"), and a script run with
	// an empty ARGV, by EVAL and its kin as by FCALL ("ERR empty script
	// argument not allowed").
	ScriptsOld = []string{"scripts-old.patch"}
	// ScriptsNarrow lifts HINCRBY's refusal but not HINCRBYFLOAT's (only
	// a script site varied to the sibling sees it), and the empty ARGV's
	// on the EVAL path but not FCALL's (only the script run through FCALL
	// sees it).
	ScriptsNarrow = []string{"scripts-old.patch", "scripts-fix-narrow.patch"}
)

// ScriptHincrby is the script site incident's session: a script that
// adds to a hash field through HINCRBY. Its 4th command fails (step 5
// when redis-cli records it: it sends COMMAND DOCS first): a negative
// increment. The scripts incidents run one script each, at the failing
// step: an earlier script's ARGV varied to empty would meet the old
// build's other fault, which the correct fix (the pristine source) does
// not have, and count against it.
var ScriptHincrby = [][]string{
	{"HSET", "stock", "apples", "10"},
	{"HINCRBY", "stock", "apples", "5"},
	{"HGET", "stock", "apples"},
	{"EVAL", "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])", "1", "stock", "apples", "-3"},
	{"HGET", "stock", "apples"},
}

// ScriptEmptyArg is the runner incident's session: a script that reads
// a string and appends its ARGV (a read: every runner, the _RO ones
// too, can run it). Its 3rd command fails (step 4 under redis-cli): an
// empty ARGV.
var ScriptEmptyArg = [][]string{
	{"SET", "greeting", "hello"},
	{"GET", "greeting"},
	{"EVAL", "return redis.call('GET', KEYS[1]) .. ARGV[1]", "1", "greeting", ""},
	{"GET", "greeting"},
}

// RecordScriptHincrby records the HINCRBY script incident into out on the
// old build with the stock redis-cli at redisCli, the failing step marked
// with the oracle error.
func RecordScriptHincrby(out, old, redisCli string) error {
	if err := RecordWithRedisCli(out, old, redisCli, ScriptHincrby); err != nil {
		return err
	}
	return MarkFailure(out, 5, "error")
}

// RecordScriptEmptyArg records the empty ARGV incident into out on the
// old build with the stock redis-cli at redisCli, the failing step marked
// with the oracle error.
func RecordScriptEmptyArg(out, old, redisCli string) error {
	if err := RecordWithRedisCli(out, old, redisCli, ScriptEmptyArg); err != nil {
		return err
	}
	return MarkFailure(out, 4, "error")
}

// ScriptDynamic is a session whose script calls the command its ARGV
// names: Kavach cannot read which command a site calls, and leaves the
// script whole. Its 2nd command fails on the scripts' old build: an empty
// ARGV.
var ScriptDynamic = [][]string{
	{"SET", "greeting", "hello"},
	{"EVAL", "return redis.call(ARGV[2], KEYS[1]) .. ARGV[1]", "1", "greeting", "", "GET"},
}

// RecordScriptDynamic records ScriptDynamic into out on the old build,
// step 2 marked with the oracle error.
func RecordScriptDynamic(out, old string) error {
	if err := RecordSession(out, old, ScriptDynamic); err != nil {
		return err
	}
	return MarkFailure(out, 2, "error")
}
