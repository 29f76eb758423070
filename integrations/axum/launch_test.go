package axum

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach/launch"
)

func TestCheckArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"--port", "{port}"}, {"--port={port}"}, {"--port", "{port}", "--state", "{state}"}, {"--state={state}"}} {
		if err := CheckArgs(args); err != nil {
			t.Errorf("CheckArgs(%q) = %v, want allowed", args, err)
		}
	}
	for _, tc := range []struct {
		args []string
		arg  string
	}{
		{[]string{"--port", "8080"}, "--port 8080"},
		{[]string{"--port", "{port}", "--bind", "0.0.0.0"}, "--bind"},
		{[]string{"--config", "/etc/app.toml"}, "--config"},
		{[]string{"--port"}, "--port"},
		{[]string{"--state", "/etc"}, "--state /etc"},
		{[]string{"--state={dir}"}, "--state={dir}"},
		{[]string{"--data", "{state}"}, "--data"},
	} {
		var lr *launch.LaunchRefused
		if err := CheckArgs(tc.args); !errors.As(err, &lr) || lr.Arg != tc.arg {
			t.Errorf("CheckArgs(%q) = %v, want %q refused", tc.args, err, tc.arg)
		}
	}
}

func TestKeysReadsAndWrites(t *testing.T) {
	reqs := [][]byte{
		[]byte("GET /items/2?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"),
		[]byte("HEAD /items HTTP/1.1\r\nHost: h\r\n\r\n"),
		[]byte("POST /items HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"),
		[]byte("DELETE /items/2 HTTP/1.1\r\nHost: h\r\n\r\n"),
		[]byte("not http"),
	}
	keys, writes, replaces := Integration{}.Keys(context.Background(), "", reqs)
	want := []string{"[/items/2]", "[/items]", "[/items]", "[/items/2]", "unknown"}
	wantWrites := []string{"[]", "[]", "[/items]", "[/items/2]", "unknown"}
	show := func(k []string) string {
		if k == nil {
			return "unknown"
		}
		return fmt.Sprint(k)
	}
	for i := range reqs {
		if s := show(keys[i]); s != want[i] {
			t.Errorf("%q: keys %s, want %s", reqs[i], s, want[i])
		}
		if s := show(writes[i]); s != wantWrites[i] {
			t.Errorf("%q: writes %s, want %s", reqs[i], s, wantWrites[i])
		}
		if replaces != nil {
			t.Errorf("%q: replaces %v, want none said (a path relates to those below it)", reqs[i], replaces)
		}
	}
}
