// Package integrationtest holds what tests need to fake a
// kavach.Integration: a base to embed that speaks no protocol, starts no
// build and has no abilities, so that a fake writes only the methods its
// test is about.
package integrationtest

import (
	"context"
	"errors"
	"time"

	"github.com/kavach-dev/kavach"
)

// Base is a kavach.Integration with no abilities. Each message is the
// whole of what has come; every answered step is OK; a response
// normalizes to its bytes as a string (it compares byte for byte); no
// build starts. Embed it and override what a test needs.
type Base struct{}

var _ kavach.Integration = Base{}

func (Base) Protocol() string                          { return "test" }
func (Base) SplitRequest(data []byte) (int, error)     { return len(data), nil }
func (Base) SplitResponse(data []byte) (int, error)    { return len(data), nil }
func (Base) Replies([]byte) int                        { return 1 }
func (Base) IsPush([]byte) bool                        { return false }
func (Base) DescribeRequest(msg []byte, _ int) string  { return string(msg) }
func (Base) DescribeResponse(msg []byte, _ int) string { return string(msg) }
func (Base) Classify([]byte, [][]byte) kavach.Outcome  { return kavach.Outcome{Kind: kavach.OK} }
func (Base) Normalize(_, response []byte) any          { return string(response) }

// ErrNoBuilds is what Base's Start returns.
var ErrNoBuilds = errors.New("integrationtest: Base starts no builds")

func (Base) Start(context.Context, kavach.Launch) (kavach.Process, error) { return nil, ErrNoBuilds }
func (Base) Version(context.Context, string) string                       { return "" }

// WithStartTimeout returns Base itself: a fake that starts builds and is
// given a start timeout overrides it.
func (b Base) WithStartTimeout(time.Duration) kavach.Integration { return b }
func (Base) CheckBuild(context.Context, string) error            { return nil }
func (Base) CheckArgs([]string) error                            { return nil }
func (Base) Abilities() kavach.Abilities                         { return kavach.Abilities{} }
