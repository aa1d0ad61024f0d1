package shellexec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/polyloop/polyloop/shellexec"
)

// driverEnv makes the test binary a driver that runs one command (the
// variable's value) in the working directory driverDirEnv names, as
// polyloop would, so that a test can kill it: see tied_linux_test.go.
const (
	driverEnv      = "SHELLEXEC_TEST_DRIVER"
	driverDirEnv   = "SHELLEXEC_TEST_DRIVER_DIR"
	driverCountEnv = "SHELLEXEC_TEST_DRIVER_COUNT" // that many commands at once (default 1)
)

func TestMain(m *testing.M) {
	command := os.Getenv(driverEnv)
	if command == "" {
		os.Exit(m.Run())
	}
	e, err := shellexec.New(shellexec.Options{Dir: os.Getenv(driverDirEnv), Shell: "sh"})
	if err == nil {
		n, _ := strconv.Atoi(os.Getenv(driverCountEnv))
		errs := make(chan error, max(n, 1))
		for range max(n, 1) {
			go func() {
				_, err := e.Execute(context.Background(), code(command))
				errs <- err
			}()
		}
		for range max(n, 1) {
			err = errors.Join(err, <-errs)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
