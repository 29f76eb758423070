// Package kavach holds the vocabulary that the rest of Kavach shares: the
// events a recording is made of, the steps verdicts name, the outcome of a
// step, the failure of an incident (an oracle and a signature), and the
// one interface an integration implements for a protocol (Integration).
//
// It imports nothing of the project; every other package imports it.
package kavach

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Version is Kavach's own version, written into fixtures and reports.
const Version = "0.1.0-dev"

// Direction says what an Event is: a connection opening or closing, or a
// message crossing it one way.
type Direction uint8

// The directions. Their numeric values are part of the fixture format.
const (
	Open     Direction = 1 // a client connection was accepted; Data is empty
	Request  Direction = 2 // bytes sent by the client (one whole frame, or raw bytes marked ParseError)
	Response Direction = 3 // bytes sent by the service (one whole frame, or raw bytes marked ParseError)
	Close    Direction = 4 // the connection closed; Data names who closed it ("client", "server", "proxy" when recording stopped, "upstream" when the service could not be reached)
)

func (d Direction) String() string {
	switch d {
	case Open:
		return "open"
	case Request:
		return "request"
	case Response:
		return "response"
	case Close:
		return "close"
	}
	return fmt.Sprintf("direction(%d)", d)
}

// EventFlags qualify an Event.
type EventFlags uint8

// The flags. Their numeric values are part of the fixture format.
const (
	// ParseError marks bytes the protocol's codec could not frame. They are
	// kept exactly as they crossed the proxy, and were forwarded unchanged.
	ParseError EventFlags = 1 << iota
	// Redacted marks an event whose bytes had secrets replaced before they
	// were written (see Redaction).
	Redacted
	// Inserted marks a request that a variant put in front of a recorded
	// one (a write that makes a key of another type, a SCRIPT LOAD): no
	// reply of it was recorded. Its client waits for its reply before the
	// connection's next event, and no recorded reply is matched to it.
	// Never written by the recorder.
	Inserted
	// Foreign marks a write that did not come through the proxy: another
	// client's, seen by the recorder's watch of the service, on a
	// connection of its own (one per client address), where the service
	// ran it. Its reply was not recorded. A replay sends it, waits for its
	// reply before anything else, and compares nothing of it.
	Foreign
	// Unordered marks a Foreign write whose order relative to a proxied
	// request naming one of its keys could not be known: a difference at
	// a step reading its keys is that, not noise, not a regression.
	Unordered
)

// Event is one thing that crossed the recording proxy.
type Event struct {
	Seq    uint64        // position in the recording's one global order, from 1
	Conn   uint64        // client connection id, from 1, in order of opening
	Dir    Direction     // what the event is
	Flags  EventFlags    // ParseError, Redacted, Inserted, Foreign, Unordered
	Offset time.Duration // time since the recording started
	Data   []byte        // exact wire bytes (for Open/Close: see Direction)
}

// Step is the N-th request of a recording, counting from 1, with the
// responses that belong to it. Verdicts name steps.
type Step struct {
	N         int
	Request   Event
	Responses []Event // in the order they arrived; may be empty (no reply, or the connection closed)
	Closed    bool    // the server closed the connection before answering all expected replies
}

// Conn is the connection the step was sent on.
func (s Step) Conn() uint64 { return s.Request.Conn }

// OutcomeKind is how a step ended.
type OutcomeKind string

// The outcome kinds.
const (
	OK    OutcomeKind = "ok"    // the service answered normally
	Error OutcomeKind = "error" // the service answered with an error of some class
	Crash OutcomeKind = "crash" // the connection closed without an answer, or the process died
	Hang  OutcomeKind = "hang"  // no answer within the step timeout
)

// Outcome is the classified result of one step.
type Outcome struct {
	Kind   OutcomeKind `json:"kind"`
	Class  string      `json:"class,omitempty"`  // for Error: the class, e.g. "ERR", "WRONGTYPE", "5xx"
	Detail string      `json:"detail,omitempty"` // evidence for a person: the error text, exit status, log tail
}

func (o Outcome) String() string {
	if o.Class != "" {
		return string(o.Kind) + ":" + o.Class
	}
	return string(o.Kind)
}

// Oracle says how to tell that a step failed: "crash", "hang", "error",
// "error:CLASS", "error:CLASS MESSAGE" or "invariant:NAME". It is what
// `kavach mark --oracle` takes.
type Oracle struct {
	Kind OutcomeKind // Crash, Hang or Error; "" with Invariant set
	// Class narrows an Error oracle to one class; empty means any error.
	Class string
	// Message narrows an Error oracle with a class to one message, its
	// variable parts masked (MaskError); empty means any message of the
	// class (a deliberately loose oracle).
	Message string
	// Invariant names the invariant whose violation is the failure.
	Invariant string
}

// ParseOracle parses the text form of an Oracle.
func ParseOracle(s string) (Oracle, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	switch {
	case kind == "crash" && !hasArg:
		return Oracle{Kind: Crash}, nil
	case kind == "hang" && !hasArg:
		return Oracle{Kind: Hang}, nil
	case kind == "error" && (!hasArg || strings.TrimSpace(arg) != ""):
		class, msg, _ := strings.Cut(strings.TrimSpace(arg), " ")
		return Oracle{Kind: Error, Class: class, Message: MaskError(msg)}, nil
	case kind == "invariant" && arg != "":
		return Oracle{Invariant: arg}, nil
	}
	return Oracle{}, fmt.Errorf("oracle %q: want crash, hang, error, error:CLASS or invariant:NAME", s)
}

func (o Oracle) String() string {
	switch {
	case o.Invariant != "":
		return "invariant:" + o.Invariant
	case o.Class != "" && o.Message != "":
		return string(o.Kind) + ":" + o.Class + " " + o.Message
	case o.Class != "":
		return string(o.Kind) + ":" + o.Class
	}
	return string(o.Kind)
}

// Fires reports whether an outcome is a failure by this oracle. An
// invariant oracle is decided by the invariant checker, not by outcomes,
// and never fires here.
func (o Oracle) Fires(out Outcome) bool {
	if o.Invariant != "" || out.Kind != o.Kind {
		return false
	}
	if o.Class != "" && o.Class != out.Class {
		return false
	}
	return o.Message == "" || o.Message == MaskError(ErrorMessage(out))
}

// ErrorSignature is the signature of an error outcome: its class and its
// message with the variable parts masked, "error:ERR value is not an
// integer or out of range". Any other outcome's signature is its kind.
func ErrorSignature(out Outcome) string {
	if out.Kind != Error {
		return string(out.Kind)
	}
	o := Oracle{Kind: Error, Class: out.Class, Message: MaskError(ErrorMessage(out))}
	if o.Class == "" {
		return string(Error)
	}
	return o.String()
}

// SignatureFor is the signature of a failure by this oracle seen as out:
// an oracle "error" takes the error's class and masked message
// (ErrorSignature); any other oracle, "error:CLASS" included, is its own
// text form.
func (o Oracle) SignatureFor(out Outcome) string {
	if o.Kind == Error && o.Class == "" && out.Kind == Error && out.Class != "" {
		return ErrorSignature(out)
	}
	return o.String()
}

// ErrorMessage is an error outcome's message without its class: what
// follows the class word when the detail starts with it ("ERR value is
// not ..." gives "value is not ..."), else the whole detail.
func ErrorMessage(out Outcome) string {
	if rest, ok := strings.CutPrefix(out.Detail, out.Class+" "); ok && out.Class != "" {
		return rest
	}
	return out.Detail
}

// MaskError masks the variable parts of an error message, so that two
// errors of one kind compare equal whatever the request said: every
// quoted part ('...' or "...") becomes '*', and every word holding a
// digit (a number, an id, a position such as script:1:) becomes #.
// Spaces are collapsed to one. It is deterministic and pure.
func MaskError(msg string) string {
	var words []string
	for i := 0; i < len(msg); {
		r, size := utf8.DecodeRuneInString(msg[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case r == '\'' || r == '"':
			c := msg[i]
			end := strings.IndexByte(msg[i+1:], c)
			if end < 0 {
				end = len(msg) - i - 1
			}
			w := string(c) + "*" + string(c)
			i += end + 2
			// Punctuation glued to the closing quote stays ("'*',").
			for i < len(msg) && strings.IndexByte(",;:.)", msg[i]) >= 0 {
				w += msg[i : i+1]
				i++
			}
			words = append(words, w)
		default:
			j := i
			for j < len(msg) {
				r, size := utf8.DecodeRuneInString(msg[j:])
				if unicode.IsSpace(r) || r == '\'' || r == '"' {
					break
				}
				j += size
			}
			w := msg[i:j]
			if strings.ContainsAny(w, "0123456789") {
				w = "#"
			}
			words = append(words, w)
			i = j
		}
	}
	return strings.Join(words, " ")
}

// MarshalText and UnmarshalText make an Oracle read and write as its text form.
func (o Oracle) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

func (o *Oracle) UnmarshalText(b []byte) error {
	p, err := ParseOracle(string(b))
	if err != nil {
		return err
	}
	*o = p
	return nil
}

// Failure is what went wrong at the failing step of a recording.
type Failure struct {
	Step   int    `json:"step"`   // the failing step F, from 1
	Oracle Oracle `json:"oracle"` // how to tell that a step failed
	// Signature is the kind of failure, what a replay must reproduce: the
	// oracle's text form made specific where the recording shows more (for
	// an oracle "error", the class and the masked message seen:
	// "error:ERR value is not an integer or out of range").
	Signature string `json:"signature"`
	// Evidence is what was seen, for a person: an error text, an exit status, a log tail.
	Evidence string `json:"evidence,omitempty"`
	// ExcludeVariants are variant kinds (VariantKinds) that do not speak
	// for this incident: none of them is generated.
	ExcludeVariants []string `json:"exclude_variants,omitempty"`
}

// VariantKinds are the kinds of variant, the names `except:` in an
// invariants file and `kavach mark --exclude` take.
var VariantKinds = []string{
	"field",         // a field of the failing request changed
	"removed",       // a field of the failing request removed
	"swap",          // the failing request's fields taken from a request of its kind
	"earlier-field", // a field of an earlier request changed or removed, the failure kept
	"moved",         // the failing request moved earlier
	"dropped",       // an earlier request dropped
	"twice",         // an earlier request delivered twice
	"clock-forward", // the clock jumps forward before the failing step
	"clock-back",    // the clock jumps back before the failing step
	"regression",    // an earlier input mutated, the recording cut before the failure
	"type",          // the failing request on a key of another type, written right before it
	"grammar",       // the failing request with another choice its grammar allows
	"number-form",   // a number of the failing request in another form or range (1e3, -0, 2^63)
	"structured",    // one part of a structured value of the failing request (a stream id's seq)
	"script-site",   // a command a script of the failing request calls, varied within its family
	"runner",        // the failing request's script run through another runner (EVALSHA, FCALL, _RO)
	"sibling",       // the failing request made by another command of its family
	"transplant",    // the failing request's trigger put into another request of the recording
	"typed-sibling", // the failing request made by a command of another family, same argument type
	"writer-value",  // a value or script of an earlier request writing the failing request's key varied, the failure kept
	"read-back",     // a number an earlier write stores in another form, read back later; the recording cut before the failure
	"wakeup",        // a blocked failing request's wakers dropped, delayed or twice, its count or timeout changed (regression, kept whole)
	"aggregate",     // an earlier request that feeds the aggregate the failing request reads, varied
	"mode",          // the failing request's, or a writer's, connection with a mode turned on or off (RESP3, no-touch)
	"upgrade",       // the old build replays up to the failing step; each build starts from the data it left there
}

// CheckVariantKinds returns an error naming the first of kinds that is not
// a variant kind.
func CheckVariantKinds(kinds []string) error {
	for _, k := range kinds {
		if !slices.Contains(VariantKinds, k) {
			return fmt.Errorf("variant kind %q: want one of %s", k, strings.Join(VariantKinds, ", "))
		}
	}
	return nil
}

// RedactedRaw is what the recorder writes in place of raw bytes it could
// not redact piece by piece (they follow a secret, or a secret word was
// cut in two by a read), followed by their length.
const RedactedRaw = "<redacted raw bytes>"

// Launch is how to start one build: the executable and its arguments,
// where "{port}" and "{dir}" are replaced by a free loopback port and a
// fresh directory, and "{state}" by the build's copy of its state
// directory (State). No shell is involved.
type Launch struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	// Env is added to Kavach's own environment for the build (a replay
	// adds the clock library's variables here).
	Env []string `json:"env,omitempty"`
	// Data, when set, is a data file in the service's own format that
	// the build loads as its own at start-up (Redis: copied into its
	// fresh directory as dump.rdb): the state a fixture recorded. Never
	// written to a fixture.
	Data string `json:"-"`
	// State, when set, is a directory of the files the service loads at
	// start-up and writes back (a fixture's state directory, or the one
	// a recording was given): each start copies it into the build's
	// fresh directory, and "{state}" in the arguments and environment
	// names that copy. The build never writes into State itself. A
	// launch whose arguments name "{state}" without one is refused.
	// Never written to a fixture.
	State string `json:"-"`
}

// KeyState is one key of the state a recording started from: its value
// in the service's own serialization (Redis: the DUMP payload), its
// database, and when it expires (Unix milliseconds; 0: never). A replay
// restores it before the first step.
type KeyState struct {
	DB       int    `json:"db"`
	Key      []byte `json:"key"`
	ExpireAt int64  `json:"expire_at_ms,omitempty"`
	Dump     []byte `json:"dump"`
}

// Seed is the state a replay starts each build from (docs/replay.md,
// "State"): a data file the build loads at start-up, keys restored
// before the first step, a state directory, or a mix; nil or empty: an
// empty build.
type Seed struct {
	Data string     // a data file (Launch.Data); "" for none
	Keys []KeyState // restored, in order, before the first step
	// Dir is a state directory (Launch.State), extracted from the
	// fixture and checked once: every build started copies it as
	// "{state}". "" for none.
	Dir string
	// Held is how many keys each database holds once the build has
	// started from the seed, as the recording saw it; the replay checks
	// it (Abilities.Held) before the first step. Nil: not checked.
	Held map[int]int
	// Saved: the seed is a build's state saved during a replay (a
	// checkpoint), not the recording's.
	Saved bool
}

// Empty reports whether the seed holds no state.
func (s *Seed) Empty() bool { return s == nil || s.Data == "" && s.Dir == "" && len(s.Keys) == 0 }

// Process is a running build.
type Process interface {
	// Addr is the loopback address the service listens on.
	Addr() string
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// Exited returns non-nil evidence (exit status, signal, log tail) once
	// the process has exited, and nil while it runs.
	Exited() *Exit
	// Stop stops the process and its process group, gently then by force,
	// and returns once it is gone. It is safe to call more than once.
	Stop() *Exit
}

// Exit is the evidence left by a build that ended.
type Exit struct {
	Status  int    `json:"status"`           // exit status, -1 when killed by a signal
	Signal  string `json:"signal,omitempty"` // the signal that ended it, if any
	LogTail string `json:"log_tail,omitempty"`
	// Notable are the lines of the build's output that say what went
	// wrong (assertions, panics, crash reports), wherever they were in
	// the last 64 KiB it wrote.
	Notable []string `json:"notable,omitempty"`
}

func (e *Exit) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit status %d", e.Status)
}

// Evidence is the exit and what the build said about it, for a person:
// its notable lines if it printed any, else the last lines it wrote.
func (e *Exit) Evidence() string {
	s := e.String()
	switch {
	case len(e.Notable) > 0:
		s += "\n" + strings.Join(e.Notable, "\n")
	case e.LogTail != "":
		s += "\n" + e.LogTail
	}
	return s
}

// Reproduces reports whether an outcome is this failure again: its
// signature (an oracle's text form, made specific) fires on the outcome.
// An invariant failure is decided by the invariant checker, not here.
func (f Failure) Reproduces(out Outcome) bool {
	sig, err := ParseOracle(f.Signature)
	if err != nil {
		sig = f.Oracle
	}
	return sig.Fires(out)
}

// FieldType is what a request field holds, which decides how variants
// mutate it.
type FieldType string

// The field types.
const (
	FieldNumber FieldType = "number" // an integer: boundaries, neighbours, signs, huge values
	FieldString FieldType = "string" // empty, other values seen, long
	FieldKey    FieldType = "key"    // a missing key, another recorded key
	FieldToken  FieldType = "token"  // one of a fixed set of words: the others
)

// Field is one mutable part of a request.
type Field struct {
	Name string `json:"name,omitempty"` // what the protocol calls it ("start", "body.parts"); may be empty
	// Key identifies the field within its request for Rebuild ("body.parts",
	// "query.page"); empty when fields are positional.
	Key   string    `json:"key,omitempty"`
	Value string    `json:"value"`
	Type  FieldType `json:"type"`
	// Alternatives are, for a token, the other words accepted in its place.
	Alternatives []string `json:"alternatives,omitempty"`
}

// Schema is what an integration learned about a service's requests from
// a running build (Redis: COMMAND DOCS). Only the integration reads it.
type Schema any

// Substitution is a request with one of its keys replaced by a key that
// Setup writes first, on the same connection; or, from Variation.Values,
// the request with one value varied.
type Substitution struct {
	Setup   [][]byte // requests sent right before Request
	Request []byte
	What    string // for a person: which key, and what it now holds
	// Kind is a Variation.Values variant kind (VariantKinds); Group is the
	// part of the request it varies, for sampling: the variants of one
	// group get their turns round by round. Both are empty for a type or
	// grammar substitution.
	Kind, Group string
	// Part, for a Values substitution, names the part of the field it
	// varies (a stream id's ms part, a number's form): one part's values
	// come in the order to try them, so that a writer's value the old
	// build refuses is replaced by the next of its part (docs/variants.md,
	// "A value the writer refuses"). Empty: the field is one part.
	Part string
	// Edit, when set, says the substitution is the request with one field
	// (as Variation.Fields numbers them) set to another value, and
	// Setup before it. Request may then be nil: the variants package
	// makes it with Rebuild only when the variant is kept, so that a
	// request of many arguments is not copied once per candidate.
	Edit *FieldEdit
	// Moved, for a sibling made on a key of another type, says which: the
	// generator carries the failing request's scenario over to it
	// (docs/variants.md, "Siblings with their scenario").
	Moved *KeyMove
}

// KeyMove is a sibling's request moved from the recorded key From to a
// key of its own, To, of type Type, written by the first Writes
// requests of the substitution's Setup (a default content of the type).
type KeyMove struct {
	From, To, Type string
	Writes         int
	// What names the sibling for a person without its default content
	// ("BLMPOP → BZMPOP (pops)").
	What string
}

// FieldEdit is one field of a request set to another value.
type FieldEdit struct {
	Field int
	Value string
}

// KeysRelate reports whether two keys (Abilities.Keys) name the same state:
// equal, or one a path and the other a path below it ("/items" and
// "/items/2").
func KeysRelate(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasPrefix(a, "/") && strings.HasPrefix(b, a) && (strings.HasSuffix(a, "/") || b[len(a)] == '/')
}

// Probe reads fingerprints of a running build's state on a connection of
// Kavach's own, with requests that neither change the state nor count as
// an access to it.
type Probe interface {
	// Sent is told every request the replay sends, in order, with its
	// connection (Redis follows each connection's SELECT).
	Sent(conn uint64, request []byte)
	// Fingerprint reads the state of keys as seen from conn: one field a
	// fact ("k type", "k digest", "k expire", "k access"), or the whole
	// keyspace's digest when keys is nil. An error means no fingerprint.
	Fingerprint(conn uint64, keys []string) (map[string]string, error)
	// Close closes the probe's connection.
	Close() error
}

// StateScope is what a request sets that later requests rely on without
// naming it by key (Abilities.SetsState).
type StateScope int

const (
	NoState     StateScope = iota // nothing: a request its keys describe
	ConnState                     // its connection's (Redis: SELECT, AUTH, HELLO, CLIENT REPLY, MULTI)
	ServerState                   // the server's, for every connection (Redis: SCRIPT LOAD, FUNCTION LOAD)
)

// Containment decides, request by request, what one replay sends.
type Containment interface {
	// Contain is told each request of the replay as it is about to be
	// sent, with its connection; raw marks bytes the codec could not
	// frame. It returns Send, Withhold with the reply Kavach gives in the
	// build's place, or SendUncompared (the request is sent, but its reply
	// cannot be the recorded one: a transaction that lost a withheld
	// command). why says why, for a person.
	Contain(conn uint64, request []byte, raw bool) (action ContainAction, reply []byte, why string)
}

// Identities maps the ids a build gives its connections (Redis: CLIENT
// ID) between a recording and one replay of it: the replayed build counts
// its connections from its own start, readiness probes included.
type Identities interface {
	// Shows reports whether the reply to request shows the id of a
	// connection (Redis: CLIENT ID, HELLO, CLIENT INFO).
	Shows(request []byte) bool
	// Learn takes in the reply to such a request as recorded and as
	// replayed: the recorded id is the replayed one from now on.
	Learn(request, recorded, replayed []byte)
	// Map is request with each connection id it names that was learnt
	// replaced by the replay's (Redis: CLIENT UNBLOCK, CLIENT KILL ID);
	// request itself when it names none.
	Map(request []byte) []byte
}

// ContainAction is what a Containment does with a request.
type ContainAction uint8

// The actions.
const (
	Send           ContainAction = iota // sent and compared
	Withhold                            // not sent: Kavach answers in the build's place
	SendUncompared                      // sent, its reply not compared
)
