package kavach

import (
	"context"
	"errors"
	"io"
	"time"
)

// Integration is everything Kavach knows about one protocol and the
// builds that speak it: how its messages are framed, classified and
// compared, how a build is started and asked what it is, and, as
// Abilities, what else the integration can do (redact secrets, vary
// requests, find keys, fingerprint state). Redis (package
// integrations/redis) and HTTP (integrations/axum) implement it.
//
// The framing, describing, classifying and normalizing methods are pure:
// no I/O, deterministic, safe for concurrent use. Every method that can
// block or do I/O takes a context and gives up when it is done.
type Integration interface {
	// Protocol is the name written into fixtures: "resp", "http".
	Protocol() string
	// SplitRequest finds the first whole request in data: n > 0 for one of
	// n bytes, n == 0 with a nil error when more bytes are needed, or an
	// error saying where data is malformed; never n > len(data).
	SplitRequest(data []byte) (n int, err error)
	// SplitResponse is SplitRequest for responses.
	SplitResponse(data []byte) (n int, err error)
	// Replies is how many responses a request expects (usually 1;
	// SUBSCRIBE to three channels expects 3).
	Replies(request []byte) int
	// IsPush reports whether a response is unsolicited (a pub/sub
	// message) rather than the reply to a pending request.
	IsPush(response []byte) bool
	// DescribeRequest renders a request on one line for a person, cut to
	// about max bytes.
	DescribeRequest(msg []byte, max int) string
	// DescribeResponse renders a response on one line for a person, cut to
	// about max bytes.
	DescribeResponse(msg []byte, max int) string
	// Classify decides between OK and Error for a step that was answered
	// (a step left unanswered is a Crash or a Hang without asking it).
	Classify(request []byte, responses [][]byte) Outcome
	// Normalize is the value replays compare for a response, a tree of
	// nil, bool, int64, float64, string, []any and map[string]any, in which
	// what the service does not promise (hash order, a pid) no longer
	// differs; the same bytes always give the same tree.
	Normalize(request, response []byte) any

	// Start starts a build in its own process group with a fresh dir and
	// a free loopback port, and returns once it is ready, or with an error
	// carrying its exit status and log tail; ctx bounds the start, and the
	// build is stopped once ctx is done. The caller stops the Process.
	Start(ctx context.Context, l Launch) (Process, error)
	// Version asks the running service at addr what version it is, for a
	// build's identity; "" when it does not say.
	Version(ctx context.Context, addr string) string
	// WithStartTimeout is the same integration giving up on a build not
	// ready within d; zero keeps its default.
	WithStartTimeout(d time.Duration) Integration
	// CheckBuild refuses, before it starts, a build at path that speaks
	// another protocol.
	CheckBuild(ctx context.Context, path string) error
	// CheckArgs refuses launch arguments recorded in a fixture that could
	// do more than change the behaviour under test (fixtures are
	// untrusted; docs/security.md).
	CheckArgs(args []string) error

	// Abilities are what else the integration can do; each one it lacks
	// is nil.
	Abilities() Abilities
}

// Abilities are an integration's optional abilities. A nil field is one
// it lacks, and Kavach then does without (each field says how). Every
// function is pure unless it takes a context.
type Abilities struct {
	// Redaction replaces secrets before they are written to a fixture.
	// Nil: recordings keep what crossed the proxy.
	Redaction *Redaction
	// Resync says where framing can start again after bytes the split
	// refused, as the service itself goes on; data starts with those
	// bytes. n > 0: data[:n] is unframable and framing resumes at n (when
	// n == len(data) and data does not end a line, the rest of the line
	// is unframable too); ok false: the rest of the direction is
	// unframable. Nil: the rest of the direction is unframable.
	Resync func(data []byte, request bool) (n int, ok bool)
	// MinFrameLen is how long the message at the start of data is at
	// least, from the part of it that has come, or 0 when that does not
	// tell; never more than its length. Nil: the recorder grows its
	// buffer as a message comes in.
	MinFrameLen func(data []byte, request bool) int
	// Identify is what version a build is, found without asking the
	// running service (Version's request would be counted by it), e.g. by
	// running the executable with --version; "" when it cannot tell. Nil:
	// only Version names a build.
	Identify func(ctx context.Context, l Launch) string
	// Settle reports whether, after the virtual clock moved from one time
	// to another, the build must run its own timer on the new time before
	// the next request (Redis caches its clock and fires blocked clients'
	// timeouts in its timer); blocked says whether a step waits for a
	// reply. The replay then waits for the build's event loop to turn
	// (docs/replay.md, "The clock library"). Nil: the clock never needs it.
	Settle func(from, to time.Time, blocked bool) bool
	// DeliberateCloses says the service closes a connection on purpose
	// with a request unanswered (Redis: QUIT from a client with CLIENT
	// REPLY OFF, CLIENT KILL of a blocked client, a protocol error): the
	// recorder then takes such a close for a crash only when the service
	// no longer answers (Held, when it has one; docs/record.md, "The failure").
	// False (HTTP): a request read and never answered is a failure.
	DeliberateCloses bool
	// ClockReads says, for a request whose reply can show what the
	// build's clock read while answering it (Redis: XADD with the id *,
	// whose id is the clock in milliseconds), how to read that time from
	// the reply; nil for any other request. A replay moves its clock to
	// the recorded reading before sending the request (docs/replay.md,
	// "The build's own reading"). Nil: requests are sent at the proxy's
	// time.
	ClockReads func(request []byte) func(reply []byte) (time.Time, bool)
	// NewContainment starts, for one replay of a build that cannot be
	// given a network of its own, the decisions of which requests Kavach
	// withholds so that the build opens no listener beyond loopback,
	// connects nowhere and loads no code the fixture chooses
	// (docs/security.md). Nil: nothing to withhold.
	NewContainment func() Containment
	// NewIdentities starts, for one replay, the map between the ids the
	// recording's build gave its connections and the ids the replayed
	// build gives them (docs/replay.md, "Connection ids"). Nil: requests
	// name connections as recorded.
	NewIdentities func() Identities
	// Restore writes keys captured from a running service into the
	// build at addr, before a replay's first step (Redis: RESTORE ...
	// ABSTTL in each key's database). Nil: a fixture's keys cannot be
	// replayed, and a replay of one is refused.
	Restore func(ctx context.Context, addr string, keys []KeyState) error
	// State is how a recording takes the state a running service holds
	// (docs/record.md, "State"). Nil: recordings in front of a running
	// service hold none.
	State *StateTaking
	// Held is how many keys each database of the build at addr holds
	// (Redis: INFO keyspace), for checking a restored state. Nil: a
	// restore is not checked.
	Held func(ctx context.Context, addr string) (map[int]int, error)
	// DataFile is the name the build loads its data file from in its
	// fresh directory (Redis: dump.rdb); "" when the integration cannot
	// start a build from one.
	DataFile string
	// SaveData has the build at addr write its state in its data file's
	// format itself, and copies it to dst, for a replay's checkpoint
	// (Redis: SAVE). It must work with the build's clock held still.
	// Nil: a replay cannot be checkpointed.
	SaveData func(ctx context.Context, addr string, dst io.Writer) (int64, error)
	// Variation splits requests into typed fields for variants. Nil: no
	// variants are made.
	Variation *Variation
	// Learn asks the running build at addr about the request kinds given
	// (Redis: COMMAND DOCS). Nil: fields are typed by guessing.
	Learn func(ctx context.Context, addr string, kinds []string) (Schema, error)
	// Keys says which keys (Redis) or resources (HTTP: the path) each
	// request reads or writes, and may ask the running build at addr.
	// keys has one entry per request: nil when unknown (it may touch
	// anything), empty when it touches no key. writes, when not nil, has
	// one entry per request: the keys it may write; a nil entry (or a nil
	// writes) means every key it touches, an empty one none. Keys relate
	// as KeysRelate says. replaces, when not nil, has one entry per
	// request: the keys whose whole content it replaces or removes
	// without reading it (Redis: the build's OW and RM key flags; SET,
	// DEL), so that no earlier write of them reaches a later step; nil
	// when none or unknown. Nil: every step may affect every other.
	Keys func(ctx context.Context, addr string, requests [][]byte) (keys, writes, replaces [][]string)
	// Inspect is a request as the value an invariant reads. Nil (with
	// Writes): invariants cannot be checked.
	Inspect func(request []byte) map[string]any
	// Writes are the keys (or paths) a request writes, and the value it
	// stores when it stores one under a single key.
	Writes func(request []byte) (keys []string, value *string)
	// Fingerprint reads the state a request is about to read, so that a
	// difference after the failing step is judged by what two builds
	// held (docs/diff.md, "After the failure"). Nil: it is inferred from
	// the keys a changed step wrote.
	Fingerprint *Fingerprinting
	// SetsState says whether a request sets state that no key names, for
	// cutting a long recording to the steps the failure depends on
	// (docs/diff.md, "Long recordings"). Nil: no request does.
	SetsState func(request []byte) StateScope
	// Kin is a request's command and the commands of its family (itself
	// included), for telling a changed refusal of the failing command
	// from a regression elsewhere. Nil: no request has kin.
	Kin func(request []byte) (command string, family []string)
	// Group asks the build at addr which group its own documentation puts
	// a request's command in, and the group's commands (itself included):
	// a later refusal changed in one of them on the same inputs is the
	// failing command's kin too, whatever Kin's table says (Redis: COMMAND
	// DOCS `group`). Nil, or an error: Kin's family alone.
	Group func(ctx context.Context, addr string, request []byte) (group string, commands []string, err error)
	// RedactArgs removes secrets from launch arguments written to a
	// fixture (Start puts one back for a replay). Nil: none are secret.
	RedactArgs func(args []string) []string
	// Unredact puts a secret back where recording redacted it in a
	// request. Nil: requests are replayed as recorded.
	Unredact func(request []byte, secret string) []byte
	// Volatile is the integration that also leaves out the response
	// fields a fixture declares volatile. Nil: it has none to declare.
	Volatile func(fields []string) Integration
	// SecretParams is the integration that also redacts these query
	// parameters (--redact-param). Nil: the protocol has none.
	SecretParams func(names []string) Integration
}

// Redaction replaces secrets in what is written to a fixture; the proxy
// forwards the original bytes. Each function returns the bytes to write
// and a note of what it replaced, empty when it replaced nothing.
type Redaction struct {
	// Request replaces secrets in a request. Required.
	Request func(request []byte) (out []byte, note string)
	// ReplyMayHoldSecret reports whether the replies to this request may
	// hold a secret only the request tells; the proxy keeps a copy of such
	// requests for Reply. Nil: no reply needs its request.
	ReplyMayHoldSecret func(request []byte) bool
	// Reply replaces secrets in a response (a CONFIG GET requirepass
	// reply, a Set-Cookie header); request is the request it answers, as
	// sent (nil for a push). Nil: responses are written as they came.
	Reply func(request, response []byte) (out []byte, note string)
	// Raw replaces what looks like a secret in bytes the integration could
	// not frame, by pattern, erring towards replacing too much. Nil: raw
	// bytes after a secret are written as RedactedRaw.
	Raw func(data []byte, request bool) (out []byte, note string)
}

// Fingerprinting is how an integration reads a build's state for
// Abilities.Fingerprint.
type Fingerprinting struct {
	// Launch is the launch to replay with so that a Probe can read the
	// build's state (Redis: debug commands allowed on loopback), given
	// every request of the recording; or a reason, not empty, why this
	// build cannot be fingerprinted.
	Launch func(l Launch, requests func(yield func([]byte) bool)) (Launch, string)
	// NewProbe is a probe of the build at addr; it connects when first
	// asked for a fingerprint.
	NewProbe func(addr string, timeout time.Duration) Probe
	// Content reports whether a fingerprint field is the state's content
	// (a key's type and value), not how the build keeps it (its access
	// clock, its encoding): a variant's answer from another content is
	// the state's doing. Nil: every field is content.
	Content func(field string) bool
}

// Variation is what variants know of a protocol's requests: typed fields
// to mutate rather than bytes, and the other requests the protocol
// allows in a request's place. Every function is pure; what one knows of
// types and key positions comes from schema (learned from the old build,
// Abilities.Learn), nil when none was learned. Fields and Rebuild are
// required; every other nil function is a kind of variant not made.
type Variation struct {
	// Fields splits a request into its kind (requests of one kind can
	// swap fields: "GETRANGE") and its fields, typed by schema, else by
	// guessing; ok false for a request it cannot split.
	Fields func(request []byte, schema Schema) (kind string, fields []Field, ok bool)
	// Rebuild encodes request again with its fields replaced by these:
	// the same fields Fields gave, in order, values changed or fields
	// left out.
	Rebuild func(request []byte, fields []Field) []byte
	// Types is the request on keys of every type the service has, each
	// written right before it (Setup).
	Types func(request []byte, schema Schema) []Substitution
	// Grammar is the request with the other choices its grammar allows:
	// tokens swapped within their group, optional parts dropped and
	// added, repeated parts repeated. No Setup.
	Grammar func(request []byte, schema Schema) []Substitution
	// Siblings is the request made by the other members of its family
	// (EVALSHA for EVAL, DECRBY for INCRBY), arguments mapped and setup
	// in Setup; skipped names the members the build lacks.
	Siblings func(request []byte, schema Schema) (subs []Substitution, skipped []string)
	// Translate is request, a write of key from, made to write the same
	// elements into key to as a value of type typ (RPUSH q a b as ZADD to
	// 0 a 1 b); ok false when it cannot. Nil: nothing is translated, and
	// a sibling on another type keeps its default content.
	Translate func(request []byte, from, to, typ string) (out []byte, ok bool)
	// Values is the request with one value varied inside its argument (a
	// number's forms, a structured value's part, a command its script
	// calls, its script run another way), each with its Kind and Group;
	// at is when the request was sent in the build's time (zero: unknown).
	Values func(request []byte, schema Schema, at time.Time) []Substitution
	// LeftWhole is what Values leaves whole in a request, and why (a
	// script it cannot read), for the report; nil when nothing.
	LeftWhole func(request []byte) []string
	// After is the Variation for a request sent after earlier (every
	// earlier step's request, oldest first), for a request that runs what
	// an earlier one sent (an EVALSHA runs an earlier SCRIPT LOAD's
	// script); variants ask it for the failing request.
	After func(earlier [][]byte) *Variation
	// TypedSiblings is the request (or a command its script calls) made
	// by commands of any family whose argument in the same role has the
	// same type, keys mapped to keys of the type each takes (in Setup);
	// Kind "typed-sibling".
	TypedSiblings func(request []byte, schema Schema) []Substitution
	// SiteTransplants is a request that runs a script with value (an
	// integer) put in place of each number its script's call sites pass;
	// nil for a request running no script it can read.
	SiteTransplants func(request []byte, value string) []Substitution
	// BlockingFields are the indexes, in fields as Fields gives them, of a
	// request's count (how many it takes once woken) and timeout, -1 for
	// none, for requests that wait for other connections (BLPOP). Nil: a
	// count follows a COUNT token, and no request has a timeout.
	BlockingFields func(request []byte, fields []Field) (count, timeout int)
	// ReadsAggregate reports whether a request reads something every
	// earlier request may feed, whatever it names (DBSIZE, a metrics
	// page). Nil: none does.
	ReadsAggregate func(request []byte) bool
	// FieldName names field i of a request in a variant's description in
	// the protocol's own words ("header X-Note"). Nil (with KeyWords):
	// fields are arguments and keys, as in Redis.
	FieldName func(i int, f Field) string
	// KeyWords say what a FieldKey field set to a missing key is, and one
	// set to another recorded key.
	KeyWords func() (missing, other string)
	// Modes are the requests that turn a mode of a connection on or off
	// (a protocol version, a client flag) which can change what request
	// does, for a connection that has sent earlier (its requests so far,
	// oldest first): each the opposite of the mode the connection is in.
	// Nil: the service has none.
	Modes func(request []byte, earlier [][]byte, schema Schema) []Mode
}

// Mode is a request that turns a mode of a connection on or off, and
// what it does, for a person ("RESP3 (HELLO 3); the connection spoke
// RESP2").
type Mode struct {
	Request []byte
	What    string
}

// StateTaking is how an integration takes the state of a running service
// for a recording (Abilities.State).
type StateTaking struct {
	// Format names the data file Snapshot writes ("rdb").
	Format string
	// Snapshot streams a point-in-time copy of the service at addr, in
	// its own data-file format, to dst; an error wrapping ErrRefused when
	// the service refuses to give one.
	Snapshot func(ctx context.Context, addr string, dst io.Writer) (int64, error)
	// NewToucher follows the requests forwarded to the service at addr;
	// with capture, it captures each key before the first request naming
	// it.
	NewToucher func(ctx context.Context, addr string, capture bool) (Toucher, error)
	// Cut asks a build started from a snapshot, its clock at the
	// snapshot's time (now), for the keys named: the snapshot cut to
	// them.
	Cut func(ctx context.Context, addr string, names [][]byte, now time.Time) ([]KeyState, error)
	// Executable is the running service's executable as it names it
	// itself, for a scratch instance of the same build; "" when it does
	// not say.
	Executable func(ctx context.Context, addr string) string
	// Watch follows every command the service at addr runs, whatever
	// client sent it (Redis: MONITOR), so that a recording keeps the
	// writes that did not come through the proxy. Nil: not watched.
	Watch func(ctx context.Context, addr string) (Watcher, error)
}

// Watcher follows the commands a running service runs, in the order it
// runs them (StateTaking.Watch).
type Watcher interface {
	// Next blocks for the next command the service ran.
	Next() (Ran, error)
	// Keys are the keys a request names, and whether the service said
	// where its keys are (false: it may touch any).
	Keys(request []byte) ([][]byte, bool)
	// Close ends the watch; a Next in progress returns an error.
	Close() error
}

// Ran is one command a running service ran, as a Watcher saw it.
type Ran struct {
	Time time.Time // by the service's clock
	DB   int
	// Origin is the client's address as the service names it (the
	// address a proxied connection dials from); for a command a script
	// ran, its caller's.
	Origin  string
	Request []byte // the command, as a request of the protocol
	// Keys are the keys of a write (and of a capture's read); KeysKnown:
	// the service said where they are. A read's are not asked.
	Keys      [][]byte
	KeysKnown bool
	// Write: it may change the data (the service's own flags), or the
	// scripts a later request runs.
	Write bool
	// Script: a script ran it; Caller: the command is a script's call
	// (EVAL, FCALL), whose writes come as commands of their own.
	Script, Caller bool
	// Blocking: it may wait for another client.
	Blocking bool
	// Mark: the point a snapshot was taken at (Snapshot's own command).
	Mark bool
	// Same reports whether request, as a client sent it, is this command.
	Same func(request []byte) bool
}

// Toucher follows the requests a recording forwards (StateTaking).
type Toucher interface {
	// Touch takes request n, forwarded on connection conn, before it is
	// forwarded, and returns the keys it captured for it.
	Touch(conn uint64, n int, request []byte) ([]KeyState, error)
	// Names are the keys the requests named, in order of first touch.
	Names() [][]byte
	// Whole says why the keys named cannot hold what the recording read
	// (the first step that read more), or "".
	Whole() string
	// Origin is the address the service sees the captures come from
	// (a Watcher's Ran.Origin), "" when none is captured.
	Origin() string
	Close() error
}

// ErrRefused is a service refusing to give its state (StateTaking.Snapshot).
var ErrRefused = errors.New("the service refused to give its state")
