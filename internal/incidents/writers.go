package incidents

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
