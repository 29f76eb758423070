package variants

// SetExact sets the bounds past which the failing request's mutations
// are told apart by what they change rather than by their bytes, and
// returns what puts them back.
func SetExact(fields, cost int) (restore func()) {
	f, c := exactFields, exactCost
	exactFields, exactCost = fields, cost
	return func() { exactFields, exactCost = f, c }
}
