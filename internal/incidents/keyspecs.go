package incidents

// The ZUNIONSTORE incident (docs/variants.md, "Type substitution"): the
// old build refuses a negative weight ("ERR negative weights not
// allowed"). The wrong fix lifts the refusal only where every source key
// is a sorted set, a set or missing: on a source key of another type it
// still refuses, where the correct fix (the pristine source) answers
// WRONGTYPE. The source keys are found by reading numkeys (the key specs
// of COMMAND INFO); its first key, last key and step name the destination
// only, where a key of another type changes nothing.
var (
	ZunionstoreOld = []string{"zunionstore-negative-weight.patch"}
	// ZunionstoreZsetsOnly is the fix made for sorted sets and sets only.
	ZunionstoreZsetsOnly = []string{"zunionstore-negative-weight.patch", "zunionstore-fix-zsets-only.patch"}
)

// Zunionstore is the ZUNIONSTORE incident's session. Step 3 fails.
var Zunionstore = [][]string{
	{"ZADD", "scores", "1", "alice", "2", "bob"},
	{"ZADD", "bonus", "5", "bob"},
	{"ZUNIONSTORE", "total", "2", "scores", "bonus", "WEIGHTS", "1", "-1"},
	{"ZSCORE", "total", "bob"},
}

// RecordZunionstore records the ZUNIONSTORE incident into out on the old
// build, step 3 marked with the oracle error.
func RecordZunionstore(out, old string) error {
	if err := RecordSession(out, old, Zunionstore); err != nil {
		return err
	}
	return MarkFailure(out, 3, "error")
}

// The SINTERSTORE incident (docs/variants.md, "Sibling commands"): a
// family derived from COMMAND DOCS (SDIFFSTORE, SINTERSTORE and
// SUNIONSTORE share the group "set" and their grammar). The old build
// refuses a destination that is also a source ("ERR the destination
// cannot be a source") in all three (setstore-other-members.patch holds
// SDIFFSTORE and SUNIONSTORE, setstore-incident-member.patch SINTERSTORE);
// the wrong fix leaves out the second patch. Only a variant made by
// another member of the derived family sees it.
var (
	SetstoreOld = []string{"setstore-other-members.patch", "setstore-incident-member.patch"}
	// SetstoreOneMember is the fix made in SINTERSTORE only.
	SetstoreOneMember = []string{"setstore-other-members.patch"}
)

// Setstore is the SINTERSTORE incident's session. Step 3 fails.
var Setstore = [][]string{
	{"SADD", "tags", "go", "redis", "lua"},
	{"SADD", "wanted", "redis", "lua", "c"},
	{"SINTERSTORE", "tags", "tags", "wanted"},
	{"SCARD", "tags"},
}

// RecordSetstore records the SINTERSTORE incident into out on the old
// build, step 3 marked with the oracle error.
func RecordSetstore(out, old string) error {
	if err := RecordSession(out, old, Setstore); err != nil {
		return err
	}
	return MarkFailure(out, 3, "error")
}
