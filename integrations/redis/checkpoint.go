package redis

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// SaveData has the build at addr write its data file itself and copies
// it to dst: SAVE, which writes it in the foreground, with no child
// process and no timer to notice the child's end, so that it works while
// a replay holds the build's clock still (the replication handshake of
// Snapshot waits for the build's timer to see its child finish). The
// file is read from where the build says it writes it (CONFIG GET dir,
// dbfilename): the build runs on this machine. Kavach's own connection,
// never one of the recording's.
func SaveData(ctx context.Context, addr string, dst io.Writer) (int64, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("save of %s: %w", addr, err)
	}
	defer c.Close()
	dir, err := configValue(c, "dir")
	if err != nil {
		return 0, fmt.Errorf("save of %s: %w", addr, err)
	}
	name, err := configValue(c, "dbfilename")
	if err != nil {
		return 0, fmt.Errorf("save of %s: %w", addr, err)
	}
	v, err := c.do("SAVE")
	if err != nil {
		return 0, fmt.Errorf("save of %s: %w", addr, err)
	}
	if v.Kind != KindSimple || string(v.Str) != "OK" {
		return 0, fmt.Errorf("save of %s: SAVE answered %q", addr, firstLine(v.Raw))
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return 0, fmt.Errorf("save of %s: %w", addr, err)
	}
	defer f.Close()
	n, err := io.Copy(dst, f)
	if err != nil {
		return n, fmt.Errorf("save of %s: copying %s: %w", addr, f.Name(), err)
	}
	return n, nil
}

// configValue is CONFIG GET of one parameter: its value.
func configValue(c *client, param string) (string, error) {
	v, err := c.do("CONFIG", "GET", param)
	if err != nil {
		return "", err
	}
	if (v.Kind != KindArray && v.Kind != KindMap) || len(v.Elems) != 2 {
		return "", fmt.Errorf("CONFIG GET %s answered %q", param, firstLine(v.Raw))
	}
	return string(v.Elems[1].Str), nil
}
