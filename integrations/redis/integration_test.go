package redis

import "testing"

// Redis has every ability but HTTP's own (volatile fields, secret
// parameters, the variants' wording): a lost one would silently turn a
// rule off, with every verdict still plausible.
func TestAbilities(t *testing.T) {
	ab := Integration{}.Abilities()
	r, v, fp := ab.Redaction, ab.Variation, ab.Fingerprint
	if r == nil || v == nil || fp == nil {
		t.Fatalf("Redaction, Variation, Fingerprint = %v, %v, %v: want all", r, v, fp)
	}
	have := map[string]bool{
		"Redaction.Request": r.Request != nil, "Redaction.ReplyMayHoldSecret": r.ReplyMayHoldSecret != nil,
		"Redaction.Reply": r.Reply != nil, "Redaction.Raw": r.Raw != nil,
		"Resync": ab.Resync != nil, "MinFrameLen": ab.MinFrameLen != nil, "Identify": ab.Identify != nil,
		"Settle": ab.Settle != nil, "NewContainment": ab.NewContainment != nil, "Learn": ab.Learn != nil,
		"Keys": ab.Keys != nil, "Inspect": ab.Inspect != nil, "Writes": ab.Writes != nil,
		"Fingerprint.Launch": fp.Launch != nil, "Fingerprint.NewProbe": fp.NewProbe != nil,
		"SetsState": ab.SetsState != nil, "Kin": ab.Kin != nil, "RedactArgs": ab.RedactArgs != nil, "Unredact": ab.Unredact != nil,
		"Variation.Fields": v.Fields != nil, "Variation.Rebuild": v.Rebuild != nil, "Variation.Types": v.Types != nil,
		"Variation.Grammar": v.Grammar != nil, "Variation.Siblings": v.Siblings != nil, "Variation.Values": v.Values != nil,
		"Variation.LeftWhole": v.LeftWhole != nil, "Variation.After": v.After != nil, "Variation.TypedSiblings": v.TypedSiblings != nil,
		"Variation.SiteTransplants": v.SiteTransplants != nil, "Variation.BlockingFields": v.BlockingFields != nil,
		"Variation.ReadsAggregate": v.ReadsAggregate != nil,
	}
	for name, ok := range have {
		if !ok {
			t.Errorf("%s: missing", name)
		}
	}
	if ab.Volatile != nil || ab.SecretParams != nil || v.FieldName != nil || v.KeyWords != nil {
		t.Error("Volatile, SecretParams, FieldName or KeyWords set: Redis has none of them")
	}
	if got := (Integration{}).WithStartTimeout(7).(Integration).StartTimeout; got != 7 {
		t.Errorf("WithStartTimeout(7): StartTimeout %v", got)
	}
}

// BenchmarkAbilities is what asking for the abilities costs: replay asks
// for Settle at each clock move. Run with
// go test -run XXX -bench Abilities -benchmem ./integrations/redis
func BenchmarkAbilities(b *testing.B) {
	in := Integration{Secret: "s"}
	for range b.N {
		if in.Abilities().Settle == nil {
			b.Fatal("no Settle")
		}
	}
}
