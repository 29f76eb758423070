// Package redissuite holds the test that runs units of Redis's own test
// suite through kavach record and replays the recording
// (scripts/redis-suite.sh; docs/redis-suite.md). It has no code of its
// own: the script is the tool, this package puts a small set of it in
// make test.
package redissuite
