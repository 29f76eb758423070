package axum

import (
	"errors"
	"testing"

	"github.com/kavach-dev/kavach/launch"
)

func TestCheckArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"--port", "{port}"}, {"--port={port}"}} {
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
	} {
		var lr *launch.LaunchRefused
		if err := CheckArgs(tc.args); !errors.As(err, &lr) || lr.Arg != tc.arg {
			t.Errorf("CheckArgs(%q) = %v, want %q refused", tc.args, err, tc.arg)
		}
	}
}
