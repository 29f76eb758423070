// Package scenarios holds the grade's longest end-to-end tests, on real
// builds: checkpoints and state directories (Redis and the sample HTTP
// service), upgrades, timers, the after-the-failure shapes, wake-ups,
// the realistic shop incidents, and the verdicts graded again and again
// beside stress-ng (UnderLoad). They are a package of their own, apart
// from grade's own tests, only so that go test runs the two beside each
// other: neither then takes more than a part of make test's time. It
// holds no code; what both packages ask of a report is
// internal/gradetest.
package scenarios
