package grade

// SuiteReport is what `kavach diff OLD NEW F1 F2 ...` writes: one report
// per fixture, in argument order, and the suite's headline verdict
// (docs/contracts.md).
type SuiteReport struct {
	SchemaVersion int `json:"schema_version"`
	// Suite is always true: it tells a suite's report from one fixture's.
	Suite   bool    `json:"suite"`
	Verdict string  `json:"verdict"` // the headline, exactly as printed first
	Parts   Verdict `json:"verdict_parts"`
	// Headline is the index in Reports of the fixture whose verdict is the
	// headline; -1 when every fixture is green.
	Headline int       `json:"headline"`
	Reports  []*Report `json:"reports"`
}

// NewSuiteReport puts the fixtures' reports, in argument order, under
// their headline.
func NewSuiteReport(reports []*Report) *SuiteReport {
	parts := make([]Verdict, len(reports))
	contract := make([]bool, len(reports))
	for i, r := range reports {
		parts[i], contract[i] = r.Parts, r.Evidence.Contract
	}
	h, i := Headline(parts, contract)
	return &SuiteReport{SchemaVersion: SchemaVersion, Suite: true, Verdict: h.String(), Parts: h, Headline: i, Reports: reports}
}
