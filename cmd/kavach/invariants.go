package main

import (
	"os"
	"strings"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/invariants"
)

// loadInvariants finds a fixture's invariants: the file given, else the
// last invariants embedded in the fixture, else FIXTURE's name with
// .invariants beside it; nil when there are none.
func loadInvariants(file string, fx *fixtures.Fixture) (*invariants.Set, error) {
	if file != "" {
		return invariants.Load(file)
	}
	if n := len(fx.Invariants); n > 0 {
		inv := fx.Invariants[n-1]
		return invariants.Parse(fx.Path+" (embedded "+inv.Name+")", inv.Source)
	}
	beside := strings.TrimSuffix(fx.Path, fixtures.Ext) + ".invariants"
	if _, err := os.Stat(beside); err == nil {
		return invariants.Load(beside)
	}
	return nil, nil
}
