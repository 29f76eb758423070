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

// Headline is a suite's verdict from its fixtures' verdicts, in argument
// order, and the index of the fixture it comes from: the first red
// verdict; else the first unverified; else fixed when an incident is
// among them, held when all are contracts (index -1).
func Headline(verdicts []Verdict, contract []bool) (Verdict, int) {
	for i, p := range verdicts {
		if !Green(p.Kind) && p.Kind != Unverified {
			return p, i
		}
	}
	for i, p := range verdicts {
		if p.Kind == Unverified {
			return p, i
		}
	}
	for i := range verdicts {
		if i < len(contract) && !contract[i] {
			return Verdict{Kind: Fixed}, -1
		}
	}
	return Verdict{Kind: Held}, -1
}

// DeriveSuite re-derives every fixture's verdict from its evidence, and
// the headline from those.
func DeriveSuite(s *SuiteReport) (Verdict, []Verdict) {
	parts := make([]Verdict, len(s.Reports))
	contract := make([]bool, len(s.Reports))
	for i, r := range s.Reports {
		if r == nil {
			continue
		}
		parts[i], _ = Derive(r.Evidence)
		contract[i] = r.Evidence.Contract
	}
	h, _ := Headline(parts, contract)
	return h, parts
}
