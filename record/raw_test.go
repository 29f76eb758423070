package record

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// rawRecorded feeds chunks, each as one read, through the framing and raw
// handling of one direction, and returns what would be written.
func rawRecorded(codec kavach.Integration, chunks ...string) (written []byte, events []message) {
	ab := codec.Abilities()
	p := &Proxy{opts: Options{Codec: codec, Redactor: ab.Redaction, MaxFrame: 64 << 20}, ab: ab, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var (
		pending []byte
		mode    rawMode
		rs      rawState
		batch   []message
	)
	for _, c := range chunks {
		chunk := []byte(c)
		switch mode {
		case rawRest:
			batch = append(batch, p.rawMessage(kavach.Request, &rs, chunk, true))
		case rawLine:
			i := bytes.IndexByte(chunk, '\n') + 1
			if i == 0 {
				batch = append(batch, p.rawMessage(kavach.Request, &rs, chunk, false))
				continue
			}
			batch = append(batch, p.rawMessage(kavach.Request, &rs, chunk[:i], false))
			pending = append(pending[:0], chunk[i:]...)
			pending, mode, batch = p.frames(1, kavach.Request, codec.SplitRequest, pending, batch, &rs)
		default:
			pending = append(pending, chunk...)
			pending, mode, batch = p.frames(1, kavach.Request, codec.SplitRequest, pending, batch, &rs)
		}
	}
	for _, m := range batch {
		written = append(written, m.data...)
	}
	return written, batch
}

// TestRawSecretsAcrossReads: a secret in raw bytes is not written however
// the reads cut them: after a broken multibulk (the rest raw), with AUTH and
// its password in different reads; with the word AUTH itself cut in two;
// and on an inline line cut by a read.
func TestRawSecretsAcrossReads(t *testing.T) {
	const secret = "hunter2-planted"
	for _, chunks := range [][]string{
		{"*2\r\n$x\r\n", "*2\r\n$4\r\nAUTH\r\n", "$15\r\n" + secret + "\r\n"},
		{"*2\r\n$x\r\n*2\r\n$4\r\nAU", "TH\r\n$15\r\n" + secret + "\r\n"},
		{"$-5 AU", "TH " + secret + "\r\n"},
		{"$-5 AUTH ", secret + "\r\n"},
	} {
		written, events := rawRecorded(redis.Integration{}, chunks...)
		if bytes.Contains(written, []byte(secret)) {
			t.Errorf("reads %q: the secret was written: %q", chunks, written)
		}
		for _, m := range events {
			if m.flags&kavach.ParseError == 0 {
				t.Errorf("reads %q: a framed message %q", chunks, m.data)
			}
		}
	}
	// A harmless raw line after a redacted one is kept as it was: it can be
	// replayed.
	written, _ := rawRecorded(redis.Integration{}, "$-5 AUTH "+secret+"\r\n", "$-6\r\n")
	if !strings.HasSuffix(string(written), "\r\n$-6\r\n") {
		t.Errorf("a harmless raw line after a secret: %q", written)
	}
	// HTTP: a header line cut by a read.
	written, _ = rawRecorded(axum.Integration{}, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization : Bea", "rer "+secret+"\r\n\r\n")
	if bytes.Contains(written, []byte(secret)) {
		t.Errorf("HTTP: the secret was written: %q", written)
	}
}
