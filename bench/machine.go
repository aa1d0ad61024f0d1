package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Machine names the machine a report was measured on.
type Machine struct {
	CPU        string `json:"cpu"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Kernel     string `json:"kernel,omitempty"`
	MemTotal   string `json:"mem_total,omitempty"`
	// LoadStart and LoadEnd are the 1, 5 and 15 minute load averages when
	// the benchmark started and ended: a busy machine shows here.
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
}

func currentMachine() Machine {
	return Machine{
		CPU:        procField("/proc/cpuinfo", "model name"),
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Kernel:     readTrim("/proc/sys/kernel/osrelease"),
		MemTotal:   procField("/proc/meminfo", "MemTotal"),
		LoadStart:  loadAvg(),
	}
}

// procField returns the value of the first "key: value" line of a /proc
// file, or "" when there is none.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// filesystemOf names the file system holding dir, from /proc/self/mounts:
// "ext4 on /dev/vda", or "" when unknown.
func filesystemOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return ""
	}
	best, desc := "", ""
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !within(abs, f[1]) || len(f[1]) < len(best) {
			continue
		}
		best, desc = f[1], f[2]+" on "+f[0]
	}
	return desc
}

func within(path, mount string) bool {
	return mount == "/" || path == mount || strings.HasPrefix(path, mount+"/")
}

// currentExecutable names this program, the one Run starts as its
// children, and its size.
func currentExecutable() Executable {
	path, err := os.Executable()
	if err != nil {
		return Executable{}
	}
	e := Executable{Path: path}
	if fi, err := os.Stat(path); err == nil {
		e.Bytes = fi.Size()
	}
	return e
}
