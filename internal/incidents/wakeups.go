package incidents

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/record"
)

// Wake-up builds (docs/variants.md, "Across connections"): the old build
// refuses a BLMPOP woken with fewer elements than its COUNT; the wrong
// fix makes a woken BLMPOP take the whole list, whatever its COUNT. The
// correct fix is the unpatched build.
var (
	WokenRefuses  = []string{"blmpop-woken-refuses.patch"}
	WokenTakesAll = []string{"blmpop-fix-takes-all.patch"}
)

// Sibling-scenario builds (docs/variants.md, "Siblings with their
// scenario"): the old build refuses a blocked pop woken with fewer
// elements than its COUNT on a list (BLMPOP) and on a sorted set
// (BZMPOP); the wrong fix mends the list's path only. The correct fix is
// the unpatched build.
var (
	WokenRefusesBoth  = []string{"blmpop-woken-refuses.patch", "bzmpop-woken-refuses.patch"}
	WokenFixListsOnly = []string{"bzmpop-woken-refuses.patch"}
)

// WokenShort is the wake-up incident's session, by go-redis: connection
// a blocks in BLMPOP 0 1 jobs LEFT COUNT 5 on an empty list; connection
// b pushes two elements a second later, which wake it. The old build
// answers the woken pop an error (step 3).
func WokenShort(addr string) error {
	c, done := connect(addr, 2)
	defer done()
	a, b, ctx := c[0], c[1], context.Background()
	// A second's margin, for a loaded machine: the pop must be blocked
	// before the push comes, or it is answered at once.
	pushed := after(time.Second, func() { b.RPush(ctx, "jobs", "a", "b") })
	err := a.Do(ctx, "BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5").Err()
	pushed()
	if err == nil {
		return fmt.Errorf("BLMPOP woken by two elements with COUNT 5 was answered: the planted bug is not there")
	}
	return nil
}

// MetricsFed is the aggregate incident's session (docs/variants.md,
// "Aggregates"), on one keep-alive connection: an item created (201),
// read back, item 0 (which does not exist) deleted (404), then the
// metrics page, which the old build refuses (500: it counted the 201
// twice, and more responses than requests is a fault).
var MetricsFed = []HTTPRequest{
	{1, "POST", "/api/v1/items", `{"name":"lamp","price_cents":1999,"quantity":1}`},
	{1, "GET", "/api/v1/items/1", ""},
	{1, "DELETE", "/api/v1/items/0", ""},
	{1, "GET", "/metrics", ""},
}

// RecordHTTPAnswered records session into out through a proxy in front
// of the build that build starts; every request must be answered.
func RecordHTTPAnswered(out string, build kavach.Launch, session []HTTPRequest) error {
	s := record.Session{Out: out, Launch: &build, Proxy: record.Options{Codec: axum.Integration{}, Redactor: axum.Integration{}.Abilities().Redaction}}
	rec, err := s.Go(context.Background(), axum.Protocol)
	if err != nil {
		return err
	}
	defer rec.Stop()
	conns := map[int]net.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i, r := range session {
		c := conns[r.Conn]
		if c == nil {
			if c, err = net.Dial("tcp", rec.Addr); err != nil {
				return err
			}
			conns[r.Conn] = c
		}
		if _, err := SendHTTP(c, r); err != nil {
			return fmt.Errorf("request %d (%s %s): %w", i+1, r.Method, r.Path, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	time.Sleep(300 * time.Millisecond) // the proxy sees the closes
	_, err = rec.Stop()
	return err
}
