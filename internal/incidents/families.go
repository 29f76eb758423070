package incidents

// The sibling-command incidents (docs/variants.md, "Sibling commands"):
// one per family of commands, each failing at one member. The old build
// plants one defect in every member of each family; the wrong fix lifts
// it in the incident's own command only, where the correct fix (the
// pristine source) has it nowhere. The defects, each with an error
// message of its own that no correct build gives:
//
//   - numeric increments refuse a negative increment ("negative increment
//     not allowed"): INCRBY, DECRBY, INCRBYFLOAT, HINCRBY, HINCRBYFLOAT, ZINCRBY;
//   - expiry setters refuse every expire ("expires are not allowed"):
//     SET with EX/PX/EXAT/PXAT, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT,
//     SETEX, PSETEX, GETEX with an expire;
//   - script runners refuse keys ("script keys are not allowed"): EVAL,
//     EVAL_RO, EVALSHA, EVALSHA_RO, FCALL, FCALL_RO;
//   - pops refuse to take the last element of a list, sorted set or set
//     ("cannot pop the last element"): LPOP, RPOP, LMPOP, BLPOP, BRPOP,
//     BLMPOP, ZPOPMIN, ZPOPMAX, ZMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, SPOP;
//   - range readers refuse a negative index ("negative index not
//     allowed"): GETRANGE, SUBSTR, LRANGE, ZRANGE, ZREVRANGE;
//   - stream range readers refuse a COUNT ("stream counts are not
//     allowed"): XRANGE, XREVRANGE.
//
// The defects sit in one function the server calls before every command
// (families-other-members.patch); the incidents' own commands (INCRBY,
// SET, EVAL, LPOP, GETRANGE, XRANGE) are added to it by
// families-incident-members.patch, which the wrong fix leaves out.
var (
	FamiliesOld = []string{"families-other-members.patch", "families-incident-members.patch"}
	// FamiliesOneMember is the fix made in the incidents' commands only.
	FamiliesOneMember = []string{"families-other-members.patch"}
	// FamiliesScriptRunnersFixed and FamiliesEvalOnly are the correct and
	// the one-member fix of the script runners' incident alone, every
	// other family's defect left as the old build has it: its variants
	// include a regression variant (SET counter 10 EX 100) that meets the
	// expiry setters' defect, which a build mending every family answers
	// otherwise, rightly red for a fix of more than the incident.
	FamiliesScriptRunnersFixed = []string{"families-other-members.patch", "families-incident-members.patch", "families-fix-script-runners.patch"}
	FamiliesEvalOnly           = []string{"families-other-members.patch", "families-incident-members.patch", "families-fix-eval-only.patch"}
)

// A FamilyIncident is a session typed into redis-cli and the step that
// fails, counting redis-cli's own COMMAND DOCS as step 1.
type FamilyIncident struct {
	Family  string
	Session [][]string
	Failing int
}

// FamilyIncidents are the incidents, one for each family.
var FamilyIncidents = []FamilyIncident{
	{"script runners", [][]string{
		{"SET", "counter", "10"},
		{"EVAL", "return redis.call('GET', KEYS[1])", "1", "counter"},
		{"GET", "counter"},
	}, 3},
	{"numeric increments", Incrby, 5},
	{"expiry setters", [][]string{
		{"SET", "greeting", "hello"},
		{"SET", "greeting", "hello world", "EX", "100"},
		{"GET", "greeting"},
		{"STRLEN", "greeting"},
	}, 3},
	{"pops", [][]string{
		{"RPUSH", "queue", "job1", "job2"},
		{"LPOP", "queue"},
		{"LLEN", "queue"},
		{"LPOP", "queue"},
		{"LLEN", "queue"},
	}, 5},
	{"range readers", [][]string{
		{"SET", "greeting", "hello world"},
		{"GETRANGE", "greeting", "0", "4"},
		{"GETRANGE", "greeting", "-5", "-1"},
		{"STRLEN", "greeting"},
	}, 4},
	{"stream range readers", [][]string{
		{"XADD", "events", "1-1", "kind", "login"},
		{"XADD", "events", "2-1", "kind", "logout"},
		{"XRANGE", "events", "-", "+", "COUNT", "1"},
		{"XLEN", "events"},
	}, 4},
}
