package grading

// WritePings is writePings, for the tests outside the package
// (mark_test.go shows a fixture with textreport.View, which imports
// grading).
var WritePings = writePings
