package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// profileFlags are the profiling flags of the commands that do the work
// (run, resume, sweep, worker, bench): each names a file written for the
// whole command, read with go tool pprof (CPU and memory) or go tool trace.
type profileFlags struct {
	cpu, mem, trace string
}

// profiled gives c the profiling flags: the profiles cover c's RunE, from
// before its first line to its return, whatever it returns.
func profiled(a *app, c *cobra.Command) *cobra.Command {
	var f profileFlags
	c.Flags().StringVar(&f.cpu, "cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof)")
	c.Flags().StringVar(&f.mem, "memprofile", "", "write a memory profile (allocations since start, live heap at the end) to this file (go tool pprof)")
	c.Flags().StringVar(&f.trace, "trace", "", "write an execution trace of the command to this file (go tool trace)")
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		stop, err := f.start()
		if err != nil {
			return err
		}
		err = run(cmd, args)
		if serr := stop(); serr != nil {
			if err == nil {
				return serr
			}
			fmt.Fprintf(a.stderr, "polyloop: %v\n", serr)
		}
		return err
	}
	return c
}

// start starts the profiles asked for; stop ends them and writes the
// memory profile. A file that cannot be created fails start, before any
// work is done.
func (f profileFlags) start() (stop func() error, err error) {
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	starts := []struct {
		path  string
		start func(*os.File) (func() error, error)
	}{
		{f.cpu, startCPU},
		{f.trace, startTrace},
		{f.mem, startMem},
	}
	for _, s := range starts {
		if s.path == "" {
			continue
		}
		file, err := os.Create(s.path)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("profile: %w", err), stopAll())
		}
		end, err := s.start(file)
		if err != nil {
			file.Close()
			return nil, errors.Join(fmt.Errorf("profile %s: %w", s.path, err), stopAll())
		}
		stops = append(stops, func() error {
			err := end()
			if cerr := file.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("profile %s: %w", s.path, err)
			}
			return nil
		})
	}
	return stopAll, nil
}

func startCPU(file *os.File) (func() error, error) {
	if err := pprof.StartCPUProfile(file); err != nil {
		return nil, err
	}
	return func() error { pprof.StopCPUProfile(); return nil }, nil
}

func startTrace(file *os.File) (func() error, error) {
	if err := trace.Start(file); err != nil {
		return nil, err
	}
	return func() error { trace.Stop(); return nil }, nil
}

// startMem writes, at the end, the allocation profile (every sampled
// allocation since the process started, and the heap still live after a
// collection), as go test -memprofile does.
func startMem(file *os.File) (func() error, error) {
	return func() error {
		runtime.GC()
		return pprof.Lookup("allocs").WriteTo(file, 0)
	}, nil
}
