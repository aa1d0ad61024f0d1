package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the library version, the Go version and the source revision of this build",
		Long: `Print the library version (the one recorded in every run's run_started
record), the Go version this program was built with, and the version control
revision of the source it was built from, with "modified" when the checkout had
uncommitted changes. "polyloop --version" prints the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprint(a.stdout, versionText(debug.ReadBuildInfo()))
			return err
		},
	}
}

// versionText describes this build from its build information (ok false:
// none, as for a binary built without module support).
func versionText(info *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "polyloop %s\n", polyloop.LibraryVersion)
	goVersion, module := runtime.Version(), ""
	settings := map[string]string{}
	if ok && info != nil {
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		module = info.Main.Path
		if v := info.Main.Version; v != "" && v != "(devel)" {
			module += " " + v
		}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
	}
	fmt.Fprintf(&b, "  go        %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	if module != "" {
		fmt.Fprintf(&b, "  module    %s\n", module)
	}
	fmt.Fprintf(&b, "  revision  %s\n", revision(settings))
	return b.String()
}

// revision is the VCS revision of the build, its time, and whether the
// checkout was modified.
func revision(settings map[string]string) string {
	rev := settings["vcs.revision"]
	if rev == "" {
		return "unknown (not built from a version control checkout, or built with -buildvcs=false)"
	}
	if t := settings["vcs.time"]; t != "" {
		rev += " " + t
	}
	if settings["vcs.modified"] == "true" {
		rev += " (modified: uncommitted changes)"
	}
	return rev
}
