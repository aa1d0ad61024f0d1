package sweep

import (
	"strings"
	"testing"
)

func TestRunIDs(t *testing.T) {
	t.Parallel()
	hash := "sha256:3fa9c2e1b7d04455aa"
	for _, tt := range []struct{ task, want string }{
		{"t17", "arith.3fa9c2e1b7d0.t17.e2.a3"},
		{"Q-9_x", "arith.3fa9c2e1b7d0.Q-9_x.e2.a3"},
		{"a.b", "arith.3fa9c2e1b7d0.~"},
		{"has space", "arith.3fa9c2e1b7d0.~"},
		{strings.Repeat("x", 65), "arith.3fa9c2e1b7d0.~"},
	} {
		id := RunID(CoordID("arith", hash, tt.task, 2), 3)
		if !strings.HasPrefix(id, tt.want) {
			t.Errorf("task %q: run id %q, want %q…", tt.task, id, tt.want)
		}
		ref, err := ParseRunID(id)
		if err != nil || ref.Sweep != "arith" || ref.AgentKey != "3fa9c2e1b7d0" || ref.Epoch != 2 || ref.Attempt != 3 || ref.Coord()+".a3" != id {
			t.Errorf("ParseRunID(%q) = %+v, %v", id, ref, err)
		}
	}
	if a, b := taskKey("a.b"), taskKey("a b"); a == b || len(a) != 17 {
		t.Errorf("hashed task keys %q and %q", a, b)
	}
	for _, bad := range []string{"x", "a.b.c.e1", "a.b.c.e0.a1", "a.b.c.e1.a01", "a.b.c.1.a1", "-a.b.c.e1.a1", "a.b.c.e1.a1.x"} {
		if _, err := ParseRunID(bad); err == nil {
			t.Errorf("ParseRunID(%q) accepted it", bad)
		}
	}
	for name, ok := range map[string]bool{"arith": true, "a_b-9": true, "": false, "-x": false, "a.b": false, strings.Repeat("a", 65): false} {
		if ValidName(name) != ok {
			t.Errorf("ValidName(%q) = %v", name, !ok)
		}
	}
}
