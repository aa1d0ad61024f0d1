package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionTextFromBuildInfo(t *testing.T) {
	t.Parallel()
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/polyloop/polyloop", Version: "v0.1.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "2b2590d"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(info, true)
	for _, want := range []string{"polyloop 0.1.0\n", "  go        go1.26.8 ", "  module    github.com/polyloop/polyloop v0.1.0\n",
		"  revision  2b2590d 2026-12-01T10:00:00Z (modified: uncommitted changes)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("version text lacks %q:\n%s", want, got)
		}
	}
	info.Settings = info.Settings[:2]
	if got := versionText(info, true); strings.Contains(got, "modified") {
		t.Errorf("an unmodified checkout says modified:\n%s", got)
	}
	if got := versionText(nil, false); !strings.Contains(got, "polyloop 0.1.0\n") || !strings.Contains(got, "revision  unknown") {
		t.Errorf("without build information:\n%s", got)
	}
}
