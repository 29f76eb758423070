package incidents

import (
	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
)

// The writers incidents (a failure that depends on state written earlier,
// and a number read back after a lossy round trip) share one old build
// and one build of wrong fixes, so that two new Redis builds serve both.
var (
	// WritersOld is ValuesOld (INCRBYFLOAT refuses negative increments,
	// XADD an explicit id with a part past 2^63) and XRANGE refusing
	// ("ERR stream range span past 2^32 ms") a range whose first entry's
	// ms is more than 2^32-1 past the start bound's, or an entry's more
	// than 2^32-1 past the previous entry's.
	WritersOld = []string{"values-old.patch", "writers-old.patch"}
	// WritersWrong is WritersOld with two wrong fixes. XRANGE's span from
	// the start bound widened, the span between entries still refused:
	// the incident's own range passes, entries written with a large gap
	// between their ids still fail. INCRBYFLOAT's refusal of negative
	// increments lifted, and a fractional result below 1e15 now written
	// through a double with 17 digits: 3.3 reads back as
	// 3.2999999999999998.
	WritersWrong = []string{"values-old.patch", "writers-old.patch", "writers-fix-wrong.patch"}
	// StreamGapFixed is the correct fix of the XRANGE incident: WritersOld
	// without the XRANGE fault (XADD still refuses an id part past 2^63,
	// as the old build does).
	StreamGapFixed = ValuesOld
)

// StreamGap is the XRANGE incident's session: three entries 1 ms apart,
// 5,000,000,000 ms past the start of time. Step 5 fails: the range from
// "-" starts more than 2^32-1 ms before its first entry.
var StreamGap = [][]string{
	{"XADD", "events", "5000000000-1", "name", "a"},
	{"XADD", "events", "5000000001-1", "name", "b"},
	{"XADD", "events", "5000000002-1", "name", "c"},
	{"XLEN", "events"},
	{"XRANGE", "events", "-", "+"},
}

// RecordStreamGap records the XRANGE incident into out on the old build,
// step 5 marked with the oracle error.
func RecordStreamGap(out, old string) error {
	if err := RecordSession(out, old, StreamGap); err != nil {
		return err
	}
	return MarkFailure(out, 5, "error")
}

// FloatReadBack is the lossy round trip's session: a balance increased by
// a fraction and read back, then a negative increment of another key,
// which fails (step 5).
var FloatReadBack = [][]string{
	{"SET", "balance", "10"},
	{"INCRBYFLOAT", "balance", "2.5"},
	{"GET", "balance"},
	{"SET", "debt", "5"},
	{"INCRBYFLOAT", "debt", "-3"},
}

// RecordFloatReadBack records the lossy round trip's incident into out on
// the old build, step 5 marked with the oracle error.
func RecordFloatReadBack(out, old string) error {
	if err := RecordSession(out, old, FloatReadBack); err != nil {
		return err
	}
	return MarkFailure(out, 5, "error")
}

// The hash decrement incident: a writer stores a wrong value, a later
// read shows it.
var (
	// HashDecrementOld stores a negative HINCRBY or HINCRBYFLOAT
	// increment twice (10 - 3 is stored as 4) while replying the right
	// value (7).
	HashDecrementOld = []string{"hash-decrement-stored-twice.patch"}
	// HashDecrementHincrbyOnly mends HINCRBY only: HINCRBYFLOAT still
	// stores a decrement twice.
	HashDecrementHincrbyOnly = []string{"hash-decrement-stored-twice.patch", "hash-fix-hincrby-only.patch"}
)

// HashDecrement is the hash decrement incident's session under redis-cli
// (COMMAND DOCS is step 1): stock raised, read, lowered; the read after
// the decrement (step 6) shows the value stored twice.
var HashDecrement = [][]string{
	{"HSET", "stock", "apples", "10", "pears", "4"},
	{"HINCRBY", "stock", "apples", "5"},
	{"HGET", "stock", "apples"},
	{"HINCRBY", "stock", "apples", "-3"},
	{"HGET", "stock", "apples"},
}

// HashDecrementInvariants says what a right read of an incremented field
// is: what the increment answered.
const HashDecrementInvariants = `name: hash-increment-reads-back
description: HGET of a field answers what the last HINCRBY or HINCRBYFLOAT of it answered
when: req.command == "HGET" && cel.bind(w, lastWrite(req.args[0]), w.found && w.req.command in ["HINCRBY", "HINCRBYFLOAT"] && w.req.args[1] == req.args[1])
check: reply == string(lastWrite(req.args[0]).reply)
`

// RecordHashDecrement records HashDecrement into out on the old build
// with the stock redis-cli at redisCli, step 6 marked as failing
// hash-increment-reads-back (HashDecrementInvariants embedded).
func RecordHashDecrement(out, old, redisCli string) error {
	if err := RecordWithRedisCli(out, old, redisCli, HashDecrement); err != nil {
		return err
	}
	f := kavach.Failure{Step: 6, Oracle: kavach.Oracle{Invariant: "hash-increment-reads-back"}, Signature: "invariant:hash-increment-reads-back",
		Evidence: "HGET answered the decrement stored twice"}
	return fixtures.Amend(out, fixtures.Amendment{Failure: &f,
		Invariants: &fixtures.Invariants{Name: "hash.invariants", Source: HashDecrementInvariants}})
}
