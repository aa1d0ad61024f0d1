package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// The passwords of every DSN form pgx reads never reach the output of
// --store and --queue errors, nor the view banner.
func TestDSNPasswordsNeverPrinted(t *testing.T) {
	t.Parallel()
	const pw = "s3cretPW"
	forms := []string{
		"postgres://alice:" + pw + "@127.0.0.1:1/none?sslmode=disable",
		"postgres://alice@127.0.0.1:1/none?sslmode=disable&password=" + pw,
		"host=127.0.0.1 port=1 user=alice password=" + pw + " dbname=none",
		"host=127.0.0.1 port=1 password='" + pw + " two' dbname=none",
	}
	for _, dsn := range forms {
		for _, args := range [][]string{
			{"--store", dsn, "ls"},
			{"--store", dsn, "view", "--addr", "127.0.0.1:0"},
			{"workers", "--queue", dsn},
			{"worker", "--queue", dsn},
		} {
			var stdout, stderr bytes.Buffer
			code := execute(args, strings.NewReader(""), &stdout, &stderr)
			if out := stdout.String() + stderr.String(); strings.Contains(out, pw) || code == exitOK {
				t.Errorf("%q: exit %d, output shows the password:\n%s", args, code, out)
			}
		}
	}
}

// The view banner names the store without its password.
func TestViewBannerHidesPassword(t *testing.T) {
	base := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if base == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	const pw = "s3cretPW" // trust authentication accepts any password
	spec := base + "&password=" + pw
	if !strings.Contains(base, "?") {
		spec = base + "?password=" + pw
	}
	pr, pw2 := io.Pipe()
	a := &app{stdin: strings.NewReader(""), stdout: pw2, stderr: io.Discard, store: spec}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.view(ctx, &viewFlags{addr: "127.0.0.1:0", poll: time.Second})
		pw2.Close() // a view that fails before its banner ends the read
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	cancel()
	if verr := <-done; verr != nil {
		t.Fatal(verr)
	}
	pw2.Close()
	if err != nil || strings.Contains(line, pw) || !strings.Contains(line, "password=xxxxx") {
		t.Errorf("view banner %q (%v) shows the password or no redacted DSN", line, err)
	}
}

// TestRedactArg: the copy of the command line the kernel shows has no
// password, whether the DSN is an argument of its own or a --flag=value.
func TestRedactArg(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@h/db":                "postgres://u:xxxxx@h/db",
		"--store=postgres://u:s3cret@h/db":        "--store=postgres://u:xxxxx@h/db",
		"--queue=host=h password=s3cret dbname=d": "--queue=host=h password=xxxxx dbname=d",
		"run":     "run",
		"--id=r1": "--id=r1",
	} {
		if got := redactArg(in); got != want {
			t.Errorf("redactArg(%q) = %q, want %q", in, got, want)
		}
	}
}
