package incidents

import (
	"context"
	"time"
)

// IdleAfterExpiry is issue 24's session, its pauses shortened: a key set
// to expire and a key holding 1, a pause past the expiry, then the expired
// key read and OBJECT IDLETIME of the other. Redis shares small integers,
// so that IDLETIME is the server's age (docs/replay.md): on a server that
// ran before the recording began (RecordClientsAged), the recording's
// answer is larger than any replay's, whose server starts at the
// recording's first instant.
func IdleAfterExpiry(addr string) error {
	c, done := connect(addr, 1)
	defer done()
	a, ctx := c[0], context.Background()
	a.Set(ctx, "k", "v", 500*time.Millisecond)
	a.Set(ctx, "keep", "1", 0)
	time.Sleep(700 * time.Millisecond)
	a.Get(ctx, "k")
	a.Do(ctx, "OBJECT", "IDLETIME", "keep")
	return nil
}
