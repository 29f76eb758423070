package axum

import "testing"

// A GET of a metrics or stats page reads an aggregate; a write to it, or
// a read of any other page, does not.
func TestReadsAggregate(t *testing.T) {
	for req, want := range map[string]bool{
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n":                       true,
		"HEAD /api/v1/stats/ HTTP/1.1\r\nHost: x\r\n\r\n":                true,
		"GET /metrics?name=x HTTP/1.1\r\nHost: x\r\n\r\n":                true,
		"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n": false,
		"GET /api/v1/items/1 HTTP/1.1\r\nHost: x\r\n\r\n":                false,
		"GET /metrics-old HTTP/1.1\r\nHost: x\r\n\r\n":                   false,
		"not http": false,
	} {
		if got := (Integration{}).ReadsAggregate([]byte(req)); got != want {
			t.Errorf("ReadsAggregate(%q) = %v, want %v", req, got, want)
		}
	}
}
