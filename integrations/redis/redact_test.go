package redis

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

func TestRedactReply(t *testing.T) {
	const pw = "s3cret-pw"
	hash := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name          string
		request       []byte
		reply, want   string
		wantUnchanged bool
	}{
		{"CONFIG GET RESP2", cmd("CONFIG", "GET", "requirepass"),
			"*2\r\n$11\r\nrequirepass\r\n$9\r\n" + pw + "\r\n", "*2\r\n$11\r\nrequirepass\r\n$10\r\n<redacted>\r\n", false},
		{"CONFIG GET RESP3 map", cmd("config", "get", "*pass*"),
			"%2\r\n$11\r\nrequirepass\r\n$9\r\n" + pw + "\r\n$10\r\nmasterauth\r\n$0\r\n\r\n",
			"%2\r\n$11\r\nrequirepass\r\n$10\r\n<redacted>\r\n$10\r\nmasterauth\r\n$0\r\n\r\n", false},
		{"CONFIG GET other", cmd("CONFIG", "GET", "maxmemory"), "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n", "", true},
		{"ACL LIST", cmd("ACL", "LIST"),
			"*1\r\n$" + itoa(len("user default on #"+hash+" ~* &* +@all")) + "\r\nuser default on #" + hash + " ~* &* +@all\r\n",
			"*1\r\n$" + itoa(len("user default on #<redacted> ~* &* +@all")) + "\r\nuser default on #<redacted> ~* &* +@all\r\n", false},
		{"ACL GETUSER RESP3", cmd("ACL", "GETUSER", "alice"),
			"%2\r\n+flags\r\n~1\r\n+on\r\n+passwords\r\n*1\r\n$64\r\n" + hash + "\r\n",
			"%2\r\n+flags\r\n~1\r\n+on\r\n+passwords\r\n*1\r\n$10\r\n<redacted>\r\n", false},
		{"ACL SETUSER echo", cmd("ACL", "SETUSER", "bob", "#"+pw),
			"-ERR Error in ACL SETUSER modifier '#" + pw + "': The password hash must be exactly 64 characters\r\n",
			"-ERR Error in ACL SETUSER modifier '<redacted>': The password hash must be exactly 64 characters\r\n", false},
		{"AUTH error", cmd("AUTH", pw), "-WRONGPASS invalid username-password pair\r\n", "", true},
		{"GET", cmd("GET", "requirepass"), "$2\r\npw\r\n", "", true},
	} {
		codec := Integration{}
		if !codec.ReplyMayHoldSecret(tc.request) && !tc.wantUnchanged {
			t.Errorf("%s: ReplyMayHoldSecret false", tc.name)
		}
		out, note := codec.RedactReply(tc.request, []byte(tc.reply))
		if tc.wantUnchanged {
			if note != "" || string(out) != tc.reply {
				t.Errorf("%s: RedactReply = %q, %q; want unchanged", tc.name, out, note)
			}
			continue
		}
		if string(out) != tc.want || note == "" {
			t.Errorf("%s: RedactReply = %q (%q), want %q", tc.name, out, note, tc.want)
		}
		if n, err := Split(out); err != nil || n != len(out) {
			t.Errorf("%s: redacted reply is not one frame: %d, %v", tc.name, n, err)
		}
	}
}

func itoa(n int) string {
	return strings.TrimSpace(strings.TrimPrefix(string(AppendInt(nil, int64(n))), ":"))
}

func TestRedactRaw(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"$-5 AUTH hunter2\r\n", "$-5 AUTH <redacted>\r\n"},
		{"*2\r\n$4\r\nAUTH\r\n$x\r\nhunter2\r\n", "*2\r\n$4\r\nAUTH\r\n<redacted>\r\n<redacted>\r\n"},
		{"-ERR unknown command '$-5', with args beginning with: 'auth' 'hunter2' \r\n",
			"-ERR unknown command '$-5', with args beginning with: '<redacted> <redacted> \r\n"},
		{"user x #" + strings.Repeat("0f", 32), "user x #<redacted>"},
		// A password that looks like a RESP header but frames nothing.
		{"$-5\r\nAUTH $2024-11-30\r\n", "$-5\r\nAUTH <redacted>\r\n"},
		{"$-5\r\nAUTH $5\r\n", "$-5\r\nAUTH <redacted>\r\n"},
		{"$-5\r\nAUTH *3\r\n", "$-5\r\nAUTH <redacted>\r\n"},
		{"$-5\r\nAUTH $-1\r\n", "$-5\r\nAUTH <redacted>\r\n"},
		// Headers that frame what follows are kept.
		{"$-5\r\nAUTH\r\n*2\r\n$4\r\nAUTH\r\n$7\r\nhunter2\r\n", "$-5\r\nAUTH\r\n*2\r\n$4\r\nAUTH\r\n$7\r\n<redacted>\r\n"},
	} {
		out, note := Integration{}.RedactRaw([]byte(tc.in), true)
		if string(out) != tc.want || note == "" {
			t.Errorf("RedactRaw(%q) = %q (%q), want %q", tc.in, out, note, tc.want)
		}
	}
	if out, note := (Integration{}).RedactRaw([]byte("$-5\r\n"), true); string(out) != "$-5\r\n" || note != "" {
		t.Errorf("RedactRaw of harmless garbage = %q, %q", out, note)
	}
}

// FuzzRedactRaw: never panics, and a secret following AUTH on the same
// line never survives.
func FuzzRedactRaw(f *testing.F) {
	f.Add([]byte("$-5\r\n"), "hunter2")
	f.Add([]byte("*2\r\n$4\r\nauth\r\n"), "pw")
	f.Add([]byte("$-5\r\n"), "$2024-11-30")
	f.Add([]byte("$-5\r\n"), "$5")
	f.Add([]byte("$-5\r\n"), "*3")
	f.Add([]byte("x"), "a\vb")
	f.Fuzz(func(t *testing.T, prefix []byte, secret string) {
		if len(secret) < 2 || strings.ContainsAny(secret, " \t\r\n\v\f") || strings.Contains(Redacted, secret) {
			return
		}
		if isSecretWord([]byte(secret)) || bytes.Contains(prefix, []byte(secret)) || strings.Contains("AUTH", secret) {
			return
		}
		data := append(append(bytes.Clone(prefix), " AUTH "...), secret+"\r\n"...)
		out, _ := Integration{}.RedactRaw(data, true)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("RedactRaw(%q) = %q: the secret survived", data, out)
		}
	})
}

func TestResync(t *testing.T) {
	for _, tc := range []struct {
		in      string
		request bool
		n       int
		ok      bool
	}{
		{"$-5\r\n*1\r\n$4\r\nPING\r\n", true, 5, true},
		{"$-5", true, 3, true},
		{"*2\r\n$x\r\n", true, 0, false},
		{"$-5\r\n", false, 0, false},
	} {
		n, ok := Integration{}.Resync([]byte(tc.in), tc.request)
		if n != tc.n || ok != tc.ok {
			t.Errorf("Resync(%q, %v) = %d, %v; want %d, %v", tc.in, tc.request, n, ok, tc.n, tc.ok)
		}
	}
}

func TestRedactArgs(t *testing.T) {
	args := []string{"--requirepass", "pw1", "--hz", "10", "--user", "bob", "on", ">pw2", "#" + strings.Repeat("a", 64), "~*", "--masterauth", "pw3"}
	out, changed := RedactArgs(args)
	want := []string{"--requirepass", "<redacted>", "--hz", "10", "--user", "bob", "on", "><redacted>", "#<redacted>", "~*", "--masterauth", "<redacted>"}
	if !changed || strings.Join(out, " ") != strings.Join(want, " ") {
		t.Errorf("RedactArgs = %q, want %q", out, want)
	}
	if args[1] != "pw1" {
		t.Error("RedactArgs changed its input")
	}
	back := UnredactArgs(out[:4], "S")
	if strings.Join(back, " ") != "--requirepass S --hz 10" {
		t.Errorf("UnredactArgs = %q", back)
	}
	back = UnredactArgs(out, "S")
	wantBack := []string{"--requirepass", "S", "--hz", "10", "--user", "bob", "on", ">S", "#" + sha256hex("S"), "~*", "--masterauth", "S"}
	if strings.Join(back, "|") != strings.Join(wantBack, "|") {
		t.Errorf("UnredactArgs = %q, want %q", back, wantBack)
	}
}

// TestRedactArgsInOneArgument: Redis reads an argument starting with -- as
// a whole configuration line, so a password inside one is a password.
func TestRedactArgsInOneArgument(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--requirepass S3cret"}, []string{"--requirepass <redacted>"}},
		{[]string{"--hz", "10", "--REQUIREPASS  S3cret"}, []string{"--hz", "10", "--REQUIREPASS <redacted>"}},
		{[]string{"--masterauth\tS3cret"}, []string{"--masterauth <redacted>"}},
		{[]string{"--user bob on >pw ~* +@all"}, []string{"--user bob on ><redacted> ~* +@all"}},
		{[]string{"--user", "bob on >pw", "<old"}, []string{"--user", "bob on ><redacted>", "<<redacted>"}},
	} {
		out, changed := RedactArgs(tc.in)
		if !changed || strings.Join(out, "|") != strings.Join(tc.want, "|") {
			t.Errorf("RedactArgs(%q) = %q, %v; want %q", tc.in, out, changed, tc.want)
		}
		for _, a := range out {
			if strings.Contains(a, "S3cret") || strings.Contains(a, "pw") || strings.Contains(a, "old") {
				t.Errorf("RedactArgs(%q) kept a secret: %q", tc.in, out)
			}
		}
	}
	if got := UnredactArgs([]string{"--requirepass <redacted>"}, "S"); got[0] != "--requirepass S" {
		t.Errorf("UnredactArgs of one argument = %q", got)
	}
}

// TestUnredactArgsOnlyCredentials: the secret goes only where a password
// went; a fixture's <redacted> anywhere else stays a literal.
func TestUnredactArgsOnlyCredentials(t *testing.T) {
	for _, args := range [][]string{
		{"--loglevel", "<redacted>"},
		{"--hz", "<redacted>"},
		{"--client-output-buffer-limit", "pubsub", "<redacted>", "8mb", "60"},
		{"--notify-keyspace-events", "><redacted>"},
		{"--loglevel <redacted>"},
		{"--requirepass", "x", "<redacted>"},
	} {
		got := UnredactArgs(args, "S3cret")
		if strings.Contains(strings.Join(got, " "), "S3cret") {
			t.Errorf("UnredactArgs(%q) = %q: the secret went where no password was", args, got)
		}
	}
}

func sha256hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// FuzzRedactArgs: never panics, and a password given to --requirepass, as
// its own argument or inside the directive's, or as a --user rule, never
// survives, whatever arguments come before it.
func FuzzRedactArgs(f *testing.F) {
	f.Add("--hz\x0010", "S3cret", uint8(0))
	f.Add("--user\x00bob", "pw", uint8(2))
	f.Add("", "x y", uint8(1))
	f.Add("--hz\x0010\x00--requirepass", "S3cret", uint8(0))
	f.Fuzz(func(t *testing.T, joined, secret string, form uint8) {
		if len(secret) < 2 || strings.ContainsAny(secret, " \t\r\n\v\f\x00") || strings.Contains(Redacted, secret) ||
			strings.Contains(joined, secret) || strings.HasPrefix(secret, "-") {
			return
		}
		args := strings.Split(joined, "\x00")
		switch form % 4 {
		case 0:
			args = append(args, "--requirepass", secret)
		case 1:
			args = append(args, "--requirepass "+secret)
		case 2:
			args = append(args, "--user", "bob", "on", ">"+secret)
		case 3:
			args = append(args, "--user bob on >"+secret+" ~*")
		}
		out, _ := RedactArgs(args)
		for _, a := range out {
			if strings.Contains(a, secret) && !strings.Contains("--requirepass --user bob on ~*", secret) {
				t.Fatalf("RedactArgs(%q) = %q: the secret survived", args, out)
			}
		}
	})
}
