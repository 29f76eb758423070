package redis

// MinFrameLen says how long the frame at the start of data is at least,
// from the headers of it that have come: for a bulk string, or an array
// whose elements' headers have come up to the one cut short, the length
// it will have. 0 when data does not tell. The recording proxy uses it to
// make room for a large value once, rather than growing its buffer as
// the value comes in (kavach.Abilities.MinFrameLen).
func (Integration) MinFrameLen(data []byte, request bool) int {
	return minLen(data, 0, 0)
}

// minLen is MinFrameLen for the value at p, nested depth deep.
func minLen(data []byte, p, depth int) int {
	if p >= len(data) {
		return 0
	}
	switch data[p] {
	case '$':
		n, q, st := fastHeader(data, p, MaxBulkLen)
		if st != fastDone {
			return 0
		}
		return q + n + 2
	case '*':
		if depth >= MaxDepth {
			return 0
		}
		count, q, st := fastHeader(data, p, MaxElems)
		if st != fastDone {
			return 0
		}
		for ; count > 0; count-- {
			end, st := fastValue(data, q, depth+1)
			if st == fastDone {
				q = end
				continue
			}
			// The element cut short: its own length, if it tells.
			return max(q, minLen(data, q, depth+1))
		}
		return q
	}
	if end, st := fastValue(data, p, depth); st == fastDone {
		return end
	}
	return 0
}
