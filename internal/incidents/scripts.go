package incidents

import (
	"crypto/sha1"
	"encoding/hex"
)

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
	// ScriptsFcallOnly lifts the empty ARGV's refusal on the FCALL path
	// only (FCALL, FCALL_RO): EVAL and EVALSHA still refuse it, and the
	// hash increments are still refused. Only a function run through the
	// EVAL path (its library wrapped into a script) sees it.
	ScriptsFcallOnly = []string{"scripts-old.patch", "scripts-fix-fcall-only.patch"}
	// ScriptsArgvFixed is the correct fix of the empty ARGV alone, on
	// every runner: the hash increments are still refused, as by the old
	// build. The runner shapes recorded inside traffic that also sends a
	// negative HINCRBY (incidents.Shop) need it: the pristine build
	// mends that refusal too, which is not the incident's.
	ScriptsArgvFixed = []string{"scripts-old.patch", "scripts-fix-argv.patch"}
	// ScriptsEvalOnly lifts the empty ARGV's refusal on the EVAL path
	// only (FCALL still refuses it; the hash increments are still
	// refused): ScriptsNarrow without its HINCRBY half, for traffic that
	// sends a negative HINCRBY of its own.
	ScriptsEvalOnly = []string{"scripts-old.patch", "scripts-fix-eval-only.patch"}
)

// HincrbyScript is the script of the EVALSHA incident, as ScriptHincrby
// runs it by EVAL.
const HincrbyScript = "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])"

// ScriptEvalsha is ScriptHincrby with its script loaded first and run by
// its sha1: the failing EVALSHA (the 5th command, step 6 under redis-cli)
// does not carry the script; the SCRIPT LOAD before it does.
var ScriptEvalsha = [][]string{
	{"HSET", "stock", "apples", "10"},
	{"HINCRBY", "stock", "apples", "5"},
	{"SCRIPT", "LOAD", HincrbyScript},
	{"HGET", "stock", "apples"},
	{"EVALSHA", sha1Hex(HincrbyScript), "1", "stock", "apples", "-3"},
	{"HGET", "stock", "apples"},
}

// RecordScriptEvalsha records ScriptEvalsha into out on the old build
// with the stock redis-cli at redisCli, the failing step marked with the
// oracle error.
func RecordScriptEvalsha(out, old, redisCli string) error {
	if err := RecordWithRedisCli(out, old, redisCli, ScriptEvalsha); err != nil {
		return err
	}
	return MarkFailure(out, 6, "error")
}

// GreetLibrary is the library of the FCALL incident: one function, a
// read of a string with its ARGV appended (ScriptEmptyArg's script, as a
// function).
const GreetLibrary = "#!lua name=greetings\nredis.register_function('greet', function(keys, args) return redis.call('GET', keys[1]) .. args[1] end)"

// ScriptFcall is the FCALL incident's session: the library loaded, then
// its function called with an empty ARGV, refused by the old build (the
// 4th command, step 5 under redis-cli).
var ScriptFcall = [][]string{
	{"SET", "greeting", "hello"},
	{"FUNCTION", "LOAD", GreetLibrary},
	{"GET", "greeting"},
	{"FCALL", "greet", "1", "greeting", ""},
	{"GET", "greeting"},
}

// RecordScriptFcall records ScriptFcall into out on the old build with
// the stock redis-cli at redisCli, the failing step marked with the
// oracle error.
func RecordScriptFcall(out, old, redisCli string) error {
	if err := RecordWithRedisCli(out, old, redisCli, ScriptFcall); err != nil {
		return err
	}
	return MarkFailure(out, 5, "error")
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

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
