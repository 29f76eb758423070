package axum

import "testing"

// HTTP has redaction, variants in its own words, keys, invariants,
// volatile headers and secret parameters, and nothing Redis alone has:
// a lost ability would silently turn a rule off.
func TestAbilities(t *testing.T) {
	ab := Integration{}.Abilities()
	r, v := ab.Redaction, ab.Variation
	if r == nil || v == nil {
		t.Fatalf("Redaction, Variation = %v, %v: want both", r, v)
	}
	for name, ok := range map[string]bool{
		"Redaction.Request": r.Request != nil, "Redaction.ReplyMayHoldSecret": r.ReplyMayHoldSecret != nil,
		"Redaction.Reply": r.Reply != nil, "Redaction.Raw": r.Raw != nil,
		"Keys": ab.Keys != nil, "Inspect": ab.Inspect != nil, "Writes": ab.Writes != nil,
		"Volatile": ab.Volatile != nil, "SecretParams": ab.SecretParams != nil,
		"Variation.Fields": v.Fields != nil, "Variation.Rebuild": v.Rebuild != nil,
		"Variation.ReadsAggregate": v.ReadsAggregate != nil, "Variation.FieldName": v.FieldName != nil, "Variation.KeyWords": v.KeyWords != nil,
	} {
		if !ok {
			t.Errorf("%s: missing", name)
		}
	}
	if ab.Resync != nil || ab.MinFrameLen != nil || ab.Identify != nil || ab.Settle != nil || ab.NewContainment != nil ||
		ab.Learn != nil || ab.Fingerprint != nil || ab.SetsState != nil || ab.Kin != nil || ab.RedactArgs != nil || ab.Unredact != nil ||
		v.Types != nil || v.Grammar != nil || v.Siblings != nil || v.Values != nil || v.After != nil || v.TypedSiblings != nil ||
		v.SiteTransplants != nil || v.BlockingFields != nil {
		t.Error("an ability only Redis has is set")
	}
	// Volatile and SecretParams each keep what the other set.
	in := ab.Volatile([]string{"x-request-id"}).Abilities().SecretParams([]string{"token"}).(Integration)
	if len(in.Volatile) != 1 || len(in.SecretParams) != 1 {
		t.Errorf("Volatile then SecretParams: %+v", in)
	}
	if got := (Integration{}).WithStartTimeout(7).(Integration).StartTimeout; got != 7 {
		t.Errorf("WithStartTimeout(7): StartTimeout %v", got)
	}
}
