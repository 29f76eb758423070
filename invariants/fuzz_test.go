package invariants

import "testing"

// FuzzParse: any file gives a set or a CompileError with a position in
// the file, never a panic; a set checks a step without panicking.
func FuzzParse(f *testing.F) {
	f.Add(strlenInv)
	f.Add("name: a\ncheck: true\n\nname: b\nwhen: step > 1\ncheck: reply == 1\n")
	f.Add("name: a\ncheck: req.command ==\n")
	f.Add("# c\n\n  x\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("f.inv", src)
		if err != nil {
			ce, ok := err.(*CompileError)
			if !ok || ce.Line < 1 || ce.Column < 1 {
				t.Fatalf("error %v (%T) without a position", err, err)
			}
			return
		}
		s.Check(strlenSteps())
	})
}
