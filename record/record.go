// Package record is Kavach's recording proxy: it sits in front of a
// service, forwards every byte unchanged, frames the traffic with an
// injected protocol codec and writes it to a fixture as it happens. It
// never parses a protocol itself.
package record
