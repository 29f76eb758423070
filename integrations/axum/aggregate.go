package axum

import "strings"

// aggregatePages are the last path segments of pages that count what
// every request did: a metrics page, statistics.
var aggregatePages = map[string]bool{"metrics": true, "stats": true}

// ReadsAggregate reports whether request reads an aggregate
// (kavach.Variation.ReadsAggregate): a GET or HEAD of a page whose last path segment
// is metrics or stats (/metrics, /api/v1/stats). Every earlier request,
// whatever its path, may have fed what it shows.
func (Integration) ReadsAggregate(request []byte) bool {
	m, err := Parse(request, true)
	if err != nil || m.Method != "GET" && m.Method != "HEAD" {
		return false
	}
	path := strings.TrimSuffix(m.Path, "/")
	return aggregatePages[path[strings.LastIndex(path, "/")+1:]]
}
