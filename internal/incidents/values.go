package incidents

// The values incidents share one old build and one build of narrow fixes,
// so that two Redis builds serve both. The correct fix of each is the
// pristine source.
var (
	// ValuesOld refuses negative INCRBYFLOAT increments ("ERR negative
	// float increment not allowed") and explicit XADD ids with a part
	// past 2^63 ("ERR ID part past 2^63 not allowed").
	ValuesOld = []string{"values-old.patch"}
	// ValuesNarrow lifts INCRBYFLOAT's refusal for integer increments
	// only (a fraction or an exponent is still refused: only a number in
	// another form sees it), and XADD's for the ms part only (a seq part
	// past 2^63 is still refused: only the seq part varied alone sees it).
	ValuesNarrow = []string{"values-old.patch", "values-fix-narrow.patch"}
)

// IncrbyFloat is the INCRBYFLOAT incident's session. Step 4 fails: a
// negative increment, written as an integer.
var IncrbyFloat = [][]string{
	{"SET", "balance", "10"},
	{"INCRBYFLOAT", "balance", "2.5"},
	{"GET", "balance"},
	{"INCRBYFLOAT", "balance", "-3"},
	{"GET", "balance"},
}

// RecordIncrbyFloat records the INCRBYFLOAT incident into out on the old
// build, step 4 marked with the oracle error.
func RecordIncrbyFloat(out, old string) error {
	if err := RecordSession(out, old, IncrbyFloat); err != nil {
		return err
	}
	return MarkFailure(out, 4, "error")
}

// StreamID is the XADD incident's session. Step 3 fails: an explicit id
// whose ms part is past 2^63.
var StreamID = [][]string{
	{"XADD", "events", "1-1", "name", "alpha"},
	{"XLEN", "events"},
	{"XADD", "events", "18446744073709551615-1", "name", "omega"},
	{"XLEN", "events"},
}

// RecordStreamID records the XADD incident into out on the old build,
// step 3 marked with the oracle error.
func RecordStreamID(out, old string) error {
	if err := RecordSession(out, old, StreamID); err != nil {
		return err
	}
	return MarkFailure(out, 3, "error")
}
