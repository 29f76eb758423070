// Package jsonout writes JSON for a terminal or a program to read, not
// for an HTML page: "<", ">" and "&" as themselves, not \u003c. It is
// the one shape of every --json output.
package jsonout

import (
	"encoding/json"
	"io"
)

// Encoder is a JSON encoder to w that leaves "<", ">" and "&" as they are.
func Encoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// Print writes v to w as indented JSON (Encoder's), with a newline.
func Print(w io.Writer, v any) error {
	enc := Encoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Lines writes each of vs to w as one line of JSON (Encoder's): JSON
// Lines, as the listings' --json outputs are.
func Lines[T any](w io.Writer, vs []T) error {
	enc := Encoder(w)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
