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
	// Past the expiry, and past a second: a replay's IDLETIME is then at
	// least 1 whatever the fraction of a second its clock starts at (a
	// replay of 0.7 s read 0 when it crossed no second, on a loaded
	// machine, and 0 reads as data the fixture lacks: replay.MissingState).
	time.Sleep(1700 * time.Millisecond)
	a.Get(ctx, "k")
	a.Do(ctx, "OBJECT", "IDLETIME", "keep")
	return nil
}
