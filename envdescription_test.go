package polyloop

import (
	"errors"
	"strings"
	"testing"
)

func TestEnvDescriptionCanonical(t *testing.T) {
	spec := EnvSpec{
		RunID:   "r1",
		Image:   "busybox",
		Limits:  EnvLimits{MemoryBytes: 64 << 20, PIDs: 32},
		Files:   []EnvFile{{Path: "/work/b.txt", Content: []byte("b")}, {Path: "/work//a.sh", Mode: 0o755, Content: []byte("a")}},
		HostEnv: []string{"LANG", "HOME"},
		WorkDir: "/",
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	d := spec.Describe("bwrap", digest)
	got, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"backend":"bwrap","files":[{"mode":493,"path":"/work/a.sh","sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},` +
		`{"mode":420,"path":"/work/b.txt","sha256":"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"}],` +
		`"host_env":["HOME","LANG"],"image":"` + digest + `","limits":{"memory_bytes":67108864,"pids":32},"network":"none"}`
	if string(got) != want {
		t.Errorf("canonical description\n got %s\nwant %s", got, want)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	if err := (EnvDescription{Backend: "x", Image: "busybox"}).Validate(); !errors.Is(err, ErrEnvInvalid) {
		t.Errorf("an image name instead of a digest validated: %v", err)
	}
}

// A snapshot without an environment hashes as before the field existed,
// and one with an environment differs.
func TestSnapshotEnvironmentOptional(t *testing.T) {
	s := Snapshot{Agent: "a", Task: Task{Input: "t"}}
	c, err := s.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(c), "environment") {
		t.Errorf("a snapshot without an environment encodes one: %s", c)
	}
	h1, _ := s.Hash()
	d := EnvSpec{Image: "x"}.Describe("bwrap", DigestOf(nil))
	s.Environment = &d
	h2, _ := s.Hash()
	if h1 == h2 {
		t.Error("the environment does not change the snapshot hash")
	}
	c2, _ := s.Canonical()
	if !strings.Contains(string(c2), `"environment":{"backend":"bwrap","image":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","network":"none"}`) {
		t.Errorf("environment not encoded canonically: %s", c2)
	}
}

func TestEnvErrorClasses(t *testing.T) {
	lost := &EnvOpError{Op: "exec", Backend: "bwrap", RunID: "r", Kind: ErrEnvLost, Err: errors.New("sandbox exited")}
	if !EnvCannotServe(lost) || !errors.Is(lost, ErrEnvFailed) || !errors.Is(lost, ErrEnvLost) {
		t.Errorf("a lost environment is not a failure: %v", lost)
	}
	if !strings.Contains(lost.Error(), "exec") || !strings.Contains(lost.Error(), "sandbox exited") {
		t.Errorf("message %q does not say which operation failed and why", lost)
	}
	if EnvCannotServe(&EnvOpError{Op: "exec", Kind: ErrEnvInvalid}) {
		t.Error("a malformed request counts as a failure of the environment")
	}
	if EnvCannotServe(nil) {
		t.Error("nil is a failure")
	}
}

func TestEnvRequestsValidate(t *testing.T) {
	good := EnvSpec{RunID: "r", Image: "i", Mounts: []EnvMount{{Source: "/", Target: "/b"}}}
	if err := good.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []EnvSpec{{Image: "i"}, {RunID: "r", Network: "bridge"}, {RunID: "r", Limits: EnvLimits{PIDs: -1}},
		{RunID: "r", Files: []EnvFile{{Path: "rel"}}}, {RunID: "r", Mounts: []EnvMount{{Source: "/a", Target: "/"}}}, {RunID: "r", WorkDir: "w"}} {
		if bad.Validate() == nil {
			t.Errorf("spec %+v validated", bad)
		}
	}
	if err := (ExecRequest{Argv: []string{"true"}, Dir: "/", Env: []string{"A=1"}}).Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []ExecRequest{{}, {Argv: []string{""}}, {Argv: []string{"x"}, Dir: "d"}, {Argv: []string{"x"}, Env: []string{"A"}}, {Argv: []string{"x"}, Timeout: -1}} {
		if bad.Validate() == nil {
			t.Errorf("request %+v validated", bad)
		}
	}
	got := CommandEnv([]string{"PATH=/bin", "HOME=/root"}, []string{"LANG=C", "HOME=/h"}, []string{"PATH=/x", "K=v"})
	if strings.Join(got, " ") != "PATH=/x HOME=/h LANG=C K=v" {
		t.Errorf("CommandEnv = %q", got)
	}
}
